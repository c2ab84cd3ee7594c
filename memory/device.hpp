#pragma once

/// @file
/// Where memory lives and where work runs: Device (cpu, cuda:N) and Stream.

#include <cstdint>
#include <string>
#include <string_view>

namespace afem::memory {

/// The kind of a Device.
enum class DeviceKind : std::uint8_t { cpu, cuda };

/// A place where memory lives and kernels run: the host CPU or one CUDA GPU by ordinal.
/// A plain value; it owns nothing.
class Device {
public:
  /// The host CPU.
  constexpr Device() = default;

  /// The host CPU.
  [[nodiscard]] static constexpr Device cpu() { return Device{}; }

  /// The CUDA GPU with this ordinal; throws afem::Error for a negative ordinal.
  [[nodiscard]] static Device cuda(int ordinal);

  /// Parses "cpu" or "cuda:N" (and "cuda", meaning cuda:0); throws afem::Error naming the text
  /// otherwise.
  [[nodiscard]] static Device parse(std::string_view text);

  [[nodiscard]] constexpr DeviceKind kind() const { return kind_; }
  [[nodiscard]] constexpr int ordinal() const { return ordinal_; }
  [[nodiscard]] constexpr bool is_cpu() const { return kind_ == DeviceKind::cpu; }
  [[nodiscard]] constexpr bool is_cuda() const { return kind_ == DeviceKind::cuda; }

  /// "cpu" or "cuda:N".
  [[nodiscard]] std::string name() const;

  friend constexpr bool operator==(Device, Device) = default;

private:
  constexpr Device(DeviceKind kind, int ordinal) : kind_(kind), ordinal_(ordinal) {}

  DeviceKind kind_ = DeviceKind::cpu;
  int ordinal_ = 0;
};

/// An in-order queue of work on a Device; a non-owning value like a pointer.
/// On the CPU every stream is the same synchronous queue: work is complete when the call that
/// enqueued it returns. On CUDA it wraps a cudaStream_t (null for the legacy default stream) that
/// its creator keeps alive.
class Stream {
public:
  /// The CPU stream.
  constexpr Stream() = default;

  /// The CPU stream.
  [[nodiscard]] static constexpr Stream cpu() { return Stream{}; }

  /// The default stream of a CUDA device.
  [[nodiscard]] static Stream cuda_default(int ordinal);

  /// Wraps a cudaStream_t the caller owns and keeps alive while the Stream is used.
  [[nodiscard]] static Stream from_native(Device device, void* native_handle);

  [[nodiscard]] constexpr Device device() const { return device_; }
  /// The cudaStream_t behind a CUDA stream; null on the CPU and for the default CUDA stream.
  [[nodiscard]] constexpr void* native_handle() const { return handle_; }

  /// Blocks the calling host thread until all work enqueued on this stream is complete.
  /// Returns at once on the CPU.
  void synchronize() const;

  /// Makes work enqueued on this stream after the call wait for the work enqueued on `other` before
  /// the call (an event on CUDA). Nothing to do on the CPU, where streams are synchronous.
  void wait_for(const Stream& other) const;

  friend constexpr bool operator==(const Stream&, const Stream&) = default;

private:
  constexpr Stream(Device device, void* handle) : device_(device), handle_(handle) {}

  Device device_;
  void* handle_ = nullptr;
};

}  // namespace afem::memory
