#include "arenafem/memory/capture_cache.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/replace_owned.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "arenafem/memory/detail/cuda_check.hpp"
#include "arenafem/memory/detail/cuda_device_guard.hpp"
#endif

namespace afem::memory {

namespace {

std::size_t element_bytes(StagedType type) {
  switch (type) {
    case StagedType::u8:
      return 1;
    case StagedType::i32:
    case StagedType::f32:
      return 4;
    case StagedType::i64:
    case StagedType::f64:
      return 8;
  }
  return 8;
}

const char* type_name(StagedType type) {
  switch (type) {
    case StagedType::u8:
      return "u8";
    case StagedType::i32:
      return "i32";
    case StagedType::i64:
      return "i64";
    case StagedType::f32:
      return "f32";
    case StagedType::f64:
      return "f64";
  }
  return "?";
}

std::string describe_all(std::span<const StagedArray> arrays) {
  std::string text = "(";
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    text += (i == 0 ? "" : ", ") + describe(arrays[i].type, arrays[i].count);
  }
  return text + ")";
}

/// Copies `bytes` from `source` to `destination` in stream order (either may be host memory on
/// CUDA); on the CPU at once.
void copy_staged(void* destination, const void* source, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) {
    return;
  }
#if AFEM_HAS_CUDA
  if (stream.device().is_cuda()) {
    AFEM_CUDA_TRY(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault,
                                  static_cast<cudaStream_t>(stream.native_handle())));
    return;
  }
#endif
  (void)stream;
  std::memcpy(destination, source, bytes);
}

}  // namespace

std::string describe(StagedType type, std::size_t count) {
  return std::string(type_name(type)) + "[" + std::to_string(count) + "]";
}

std::size_t StagedArray::bytes() const {
  return count * element_bytes(type);
}

const Stream& CaptureRecorder::stream() const {
  return entry_->stream_;
}

Arena& CaptureRecorder::scratch() {
  scratch_used_ = true;
  return *entry_->arena_;
}

void* CaptureRecorder::staging(std::size_t index, bool output, StagedType type) const {
  auto& staged = output ? entry_->outputs_ : entry_->inputs_;
  const char* role = output ? "output" : "input";
  AFEM_EXPECTS(index < staged.size(), "CaptureRecorder: " + entry_->label_ + " has " +
                                          std::to_string(staged.size()) + " " + role +
                                          "s; asked for " + role + " " + std::to_string(index));
  AFEM_EXPECTS(staged[index].type == type, "CaptureRecorder: " + entry_->label_ + " " + role + " " +
                                               std::to_string(index) + " is " +
                                               describe(staged[index].type, staged[index].count) +
                                               "; read as " + type_name(type));
  return staged[index].buffer.data();
}

std::size_t CaptureRecorder::count(std::size_t index, bool output) const {
  return (output ? entry_->outputs_ : entry_->inputs_)[index].count;
}

void* CaptureRecorder::static_bytes(std::size_t bytes, std::string_view name) {
  AFEM_EXPECTS(!scratch_used_, "CaptureRecorder: " + entry_->label_ + " asked for static buffer '" +
                                   std::string(name) +
                                   "' after scratch(); take static buffers first");
  auto buffer = borrow_temporary<std::byte>(*entry_->arena_, bytes,
                                            entry_->label_ + ".static." + std::string(name));
  void* pointer = buffer.data();
  entry_->statics_.push_back(std::move(buffer));
  return pointer;
}

void CaptureRecorder::launch(std::function<void(const Stream&)> work) {
  AFEM_EXPECTS(static_cast<bool>(work), "CaptureRecorder::launch: empty work");
  if (entry_->stream_.device().is_cuda()) {
    work(entry_->stream_);
    return;
  }
  entry_->launches_.push_back(std::move(work));
}

namespace detail {

std::size_t CaptureEntry::planned_bytes(std::span<const StagedArray> inputs,
                                        std::span<const StagedArray> outputs,
                                        std::size_t scratch_bytes) {
  std::size_t bytes = Pool::size_class(scratch_bytes);
  for (const auto arrays : {inputs, outputs}) {
    for (const StagedArray& array : arrays) {
      bytes += array.bytes() == 0 ? 0 : Pool::size_class(array.bytes());
    }
  }
  return bytes;
}

CaptureEntry::CaptureEntry(Pool& pool, std::string label, const Stream& stream,
                           std::span<const StagedArray> inputs,
                           std::span<const StagedArray> outputs, std::size_t scratch_bytes)
    : label_(std::move(label)), stream_(stream), last_stream_(stream) {
  AFEM_EXPECTS(stream.device() == pool.device(),
               "CaptureCache: " + label_ + " runs on a stream of " + stream.device().name() +
                   " but its pool is on " + pool.device().name());
#if AFEM_HAS_CUDA
  AFEM_EXPECTS(!stream.device().is_cuda() || stream.native_handle() != nullptr,
               "CaptureCache: " + label_ +
                   " cannot be captured on the legacy default stream; pass a stream the caller "
                   "created (Stream::from_native)");
#endif
  AFEM_EXPECTS(scratch_bytes > 0, "CaptureCache: " + label_ + " needs scratch_bytes > 0");
  // One chunk of a whole size class, so that the capacity leaves no room for a second one.
  const std::size_t chunk = Pool::size_class(scratch_bytes);
  arena_ = std::make_unique<Arena>(pool, ArenaOptions{.name = label_ + ".scratch",
                                                      .chunk_bytes = chunk,
                                                      .capacity_bytes = chunk,
                                                      .stream = stream});
  {
    // Takes the arena's one chunk now, so that the capture window asks the pool for nothing.
    const Temporary<std::byte> prime = borrow_temporary<std::byte>(*arena_, 1, label_ + ".prime");
  }
  const auto stage = [&](std::span<const StagedArray> arrays, std::vector<Staged>& into,
                         const char* role) {
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      AFEM_EXPECTS(
          arrays[i].count == 0 || arrays[i].data != nullptr,
          "CaptureCache: " + label_ + " " + role + " " + std::to_string(i) + " has no data");
      Staged staged;
      staged.type = arrays[i].type;
      staged.count = arrays[i].count;
      if (arrays[i].bytes() > 0) {
        replace_owned(
            staged.buffer,
            Temporary<std::byte>(
                pool,
                pool.allocate(arrays[i].bytes(), label_ + "." + role + std::to_string(i), stream),
                arrays[i].bytes()));
      }
      into.push_back(std::move(staged));
    }
  };
  stage(inputs, inputs_, "input");
  stage(outputs, outputs_, "output");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    AFEM_EXPECTS(outputs[i].count == 0 || outputs[i].mutable_data != nullptr,
                 "CaptureCache: " + label_ + " output " + std::to_string(i) + " is not writable");
  }
#if AFEM_HAS_CUDA
  if (stream.device().is_cuda()) {
    const CudaDeviceGuard guard(stream.device().ordinal());
    cudaEvent_t event = nullptr;
    AFEM_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    native_.event = event;
  }
#endif
}

void CaptureEntry::capture(const CaptureStep& step) {
  CaptureRecorder recorder(*this);
#if AFEM_HAS_CUDA
  if (stream_.device().is_cuda()) {
    const CudaDeviceGuard guard(stream_.device().ordinal());
    const auto native = static_cast<cudaStream_t>(stream_.native_handle());
    AFEM_CUDA_TRY(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      step(recorder);
    } catch (...) {
      // Close the capture whatever state it is in, and drop what it recorded.
      (void)cudaStreamEndCapture(native, &graph);
      if (graph != nullptr) {
        (void)cudaGraphDestroy(graph);
      }
      (void)cudaGetLastError();
      throw;
    }
    AFEM_CUDA_TRY(cudaStreamEndCapture(native, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    AFEM_CUDA_TRY(status);
    native_.graph = exec;
    return;
  }
#endif
  step(recorder);
}

void CaptureEntry::replay(const Stream& stream, std::span<const StagedArray> inputs,
                          std::span<const StagedArray> outputs) {
  if (!(stream == last_stream_)) {
    stream.wait_for(last_stream_);  // the staging buffers are used in order across streams
    last_stream_ = stream;
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    copy_staged(inputs_[i].buffer.data(), inputs[i].data, inputs[i].bytes(), stream);
  }
#if AFEM_HAS_CUDA
  if (stream.device().is_cuda()) {
    const CudaDeviceGuard guard(stream.device().ordinal());
    const auto native = static_cast<cudaStream_t>(stream.native_handle());
    try {
      AFEM_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(native_.graph), native));
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        copy_staged(outputs[i].mutable_data, outputs_[i].buffer.data(), outputs[i].bytes(), stream);
      }
      AFEM_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(native_.event), native));
    } catch (...) {
      // Copies already queued may still read the staging buffers: let them finish first.
      (void)cudaStreamSynchronize(native);
      throw;
    }
    return;
  }
#endif
  for (const auto& work : launches_) {
    work(stream);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    copy_staged(outputs[i].mutable_data, outputs_[i].buffer.data(), outputs[i].bytes(), stream);
  }
}

std::string CaptureEntry::mismatch(std::span<const StagedArray> inputs,
                                   std::span<const StagedArray> outputs) const {
  const auto same = [](std::span<const StagedArray> arrays, const std::vector<Staged>& staged) {
    if (arrays.size() != staged.size()) {
      return false;
    }
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      if (arrays[i].type != staged[i].type || arrays[i].count != staged[i].count) {
        return false;
      }
    }
    return true;
  };
  if (same(inputs, inputs_) && same(outputs, outputs_)) {
    return {};
  }
  const auto captured = [](const std::vector<Staged>& staged) {
    std::string text = "(";
    for (std::size_t i = 0; i < staged.size(); ++i) {
      text += (i == 0 ? "" : ", ") + describe(staged[i].type, staged[i].count);
    }
    return text + ")";
  };
  return "inputs " + captured(inputs_) + " and outputs " + captured(outputs_) +
         " at capture, now inputs " + describe_all(inputs) + " and outputs " +
         describe_all(outputs);
}

std::size_t CaptureEntry::retained_bytes() const {
  std::size_t bytes = arena_ ? arena_->stats().reserved_bytes : 0;
  for (const auto* staged : {&inputs_, &outputs_}) {
    for (const Staged& s : *staged) {
      bytes += s.buffer.size() == 0 ? 0 : Pool::size_class(s.buffer.size());
    }
  }
  return bytes;
}

void CaptureEntry::wait_for_last_replay() const noexcept {
#if AFEM_HAS_CUDA
  if (native_.event != nullptr) {
    const cudaError_t status = cudaEventSynchronize(static_cast<cudaEvent_t>(native_.event));
    if (status != cudaSuccess) {
      std::fprintf(stderr, "arenafem: CaptureCache %s: waiting for the last replay failed: %s\n",
                   label_.c_str(), cudaGetErrorName(status));
    }
  }
#endif
}

CaptureEntry::~CaptureEntry() {
  wait_for_last_replay();
#if AFEM_HAS_CUDA
  if (native_.graph != nullptr) {
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(native_.graph));
  }
#endif
  launches_.clear();
  inputs_.clear();
  outputs_.clear();
  statics_.clear();
  arena_.reset();
#if AFEM_HAS_CUDA
  if (native_.event != nullptr) {
    (void)cudaEventDestroy(static_cast<cudaEvent_t>(native_.event));
  }
#endif
}

}  // namespace detail

}  // namespace afem::memory
