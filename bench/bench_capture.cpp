/// @file
/// A 20-launch step run three ways in one binary, so that their ratios are measured side by side:
///
///   BM_Step_Direct            the 20 for_each launches called one after the other
///   BM_Step_Replay            the same step captured once in a CaptureCache and replayed (a CUDA
///                             graph on a GPU, the recorded launch list on the CPU), with one
///                             staged input copied in and one output copied out per replay
///   BM_Step_ReplayUnstaged    the captured step on the caller's buffers (no staged arrays): the
///                             launch mechanism alone
///   BM_Step_ClearAndRecapture clear() then run(): release the entry, capture again, replay once
///
/// Each launch is y[i] = a_k y[i] + x[i] over n elements (n = 1k and 100k: launch-bound and
/// bandwidth-bound). On the CPU a replay saves nothing but the host code between launches, so the
/// ratio Replay/Direct shows the overhead of the recorded list; on CUDA it shows what a graph saves
/// over 20 separate launches.
///
/// Run (the CPU is shared and noisy: use repetitions and compare medians):
///
///   build/release/bench/bench_capture --benchmark_repetitions=5
///       --benchmark_report_aggregates_only=true   (one line)

#include <benchmark/benchmark.h>

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "arenafem/memory/capture_cache.hpp"
#include "arenafem/memory/captured_for_each.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/copy.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/replace_owned.hpp"
#include "arenafem/memory/temporary.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using afem::memory::ArrayView;
constexpr int launches = 20;

struct AxpyLaunch {
  ArrayView<const double> x;
  ArrayView<double> y;
  double a = 0.0;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const { y[i] = a * y[i] + x[i]; }
};

/// The stream, pool and buffers of one benchmark.
struct Setup {
  explicit Setup(std::size_t n) {
#if AFEM_HAS_CUDA
    cudaStream_t created = nullptr;
    (void)cudaStreamCreate(&created);
    native = created;
    stream = afem::memory::Stream::from_native(afem::memory::Device::cuda(0), native);
#endif
    pool = std::make_unique<afem::memory::Pool>(
        afem::memory::device_resource(),
        afem::memory::PoolOptions{.name = "bench_capture", .stream = stream});
    afem::memory::replace_owned(input, *pool, n, "bench.input");
    afem::memory::replace_owned(output, *pool, n, "bench.output");
    afem::memory::replace_owned(work, *pool, n, "bench.work");
    const std::vector<double> ones(n, 1.0);
    afem::memory::copy_to_device(input.view(), std::span<const double>(ones), stream);
    afem::memory::copy_to_device(work.view(), std::span<const double>(ones), stream);
    stream.synchronize();
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;
  Setup(Setup&&) = delete;
  Setup& operator=(Setup&&) = delete;
  ~Setup() {
    input.release();
    output.release();
    work.release();
    pool.reset();
#if AFEM_HAS_CUDA
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(native));
#endif
  }

  afem::memory::Stream stream;
  void* native = nullptr;
  std::unique_ptr<afem::memory::Pool> pool;
  afem::memory::Temporary<double> input;
  afem::memory::Temporary<double> output;
  afem::memory::Temporary<double> work;
};

void launch_direct(const afem::memory::Stream& stream, std::size_t n, const AxpyLaunch& step) {
#if AFEM_HAS_CUDA
  thrust::for_each_n(thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(stream.native_handle())),
                     thrust::counting_iterator<std::size_t>(0), n, step);
#else
  (void)stream;
  thrust::for_each_n(thrust::device, thrust::counting_iterator<std::size_t>(0), n, step);
#endif
}

/// The captured step: the 20 launches on the staged input and output.
void record(afem::memory::CaptureRecorder& recorder) {
  const ArrayView<const double> x = recorder.input<double>(0);
  const ArrayView<double> y = recorder.output<double>(0);
  for (int k = 0; k < launches; ++k) {
    afem::memory::captured_for_each(recorder, x.size(), AxpyLaunch{x, y, 0.5 + 0.01 * k});
  }
}

/// A Setup and a cache holding the step captured on its staged input and output.
struct StagedCapture {
  explicit StagedCapture(std::size_t n)
      : setup(n),
        cache(*setup.pool, {.name = "bench"}),
        inputs{afem::memory::staged_input(setup.input.view())},
        outputs{afem::memory::staged_output(setup.output.view())} {
    run();
  }
  void run() { cache.run(0, setup.stream, inputs, outputs, record); }

  Setup setup;
  afem::memory::CaptureCache<int> cache;
  std::array<afem::memory::StagedArray, 1> inputs;
  std::array<afem::memory::StagedArray, 1> outputs;
};

void BM_Step_Direct(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Setup setup(n);
  for (auto _ : state) {
    for (int k = 0; k < launches; ++k) {
      launch_direct(setup.stream, n,
                    AxpyLaunch{setup.input.view(), setup.work.view(), 0.5 + 0.01 * k});
    }
    setup.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * launches);
}

void BM_Step_Replay(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  StagedCapture bench(n);
  Setup& setup = bench.setup;
  for (auto _ : state) {
    bench.run();
    setup.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * launches);
  state.counters["retained_KiB"] = static_cast<double>(bench.cache.stats().retained_bytes) / 1024.0;
}

void BM_Step_ReplayUnstaged(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Setup setup(n);
  afem::memory::CaptureCache<int> cache(*setup.pool, {.name = "bench"});
  const ArrayView<const double> x = setup.input.view();
  const ArrayView<double> y = setup.work.view();
  const auto step = [x, y](afem::memory::CaptureRecorder& recorder) {
    for (int k = 0; k < launches; ++k) {
      afem::memory::captured_for_each(recorder, x.size(), AxpyLaunch{x, y, 0.5 + 0.01 * k});
    }
  };
  cache.run(0, setup.stream, {}, {}, step);
  for (auto _ : state) {
    cache.run(0, setup.stream, {}, {}, step);
    setup.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * launches);
}

void BM_Step_ClearAndRecapture(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  StagedCapture bench(n);
  Setup& setup = bench.setup;
  const std::uint64_t upstream = setup.pool->stats().upstream_allocations;
  for (auto _ : state) {
    bench.cache.clear();
    bench.run();
    setup.stream.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * launches);
  state.counters["upstream_allocs"] =
      static_cast<double>(setup.pool->stats().upstream_allocations - upstream);
}

BENCHMARK(BM_Step_Direct)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Step_Replay)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Step_ReplayUnstaged)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Step_ClearAndRecapture)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
