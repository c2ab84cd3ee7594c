#pragma once

/// @file
/// OwnedStream: a stream created for its owner, which a CUDA graph can be captured on.

#include "arenafem/memory/device.hpp"

namespace afem::memory {

/// Creates a stream on `device` and destroys it with itself: a new non-blocking cudaStream_t on a
/// CUDA device (its destructor waits for the stream's work first), the CPU stream on the CPU.
/// Captured steps need one on CUDA: the legacy default stream cannot be captured. Give it to a
/// Pool (PoolOptions::stream) that it outlives.
class OwnedStream {
public:
  /// Throws afem::CudaError when CUDA cannot create the stream, afem::Error for a CUDA device in
  /// a build without CUDA.
  explicit OwnedStream(Device device);
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  OwnedStream(OwnedStream&&) = delete;
  OwnedStream& operator=(OwnedStream&&) = delete;

  /// The stream; valid until this object is destroyed.
  [[nodiscard]] const Stream& stream() const noexcept { return stream_; }

private:
  Stream stream_;
};

}  // namespace afem::memory
