// CUDA backend only (built when ARENAFEM_CUDA=ON): a Pool over cudaMallocAsync and its
// stream-ordered reuse. Skips where no GPU is present.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "arenafem/memory/cuda_resource.hpp"
#include "arenafem/memory/pool.hpp"
#include "arenafem/memory/temporary.hpp"
#include "support/backend.hpp"

namespace afem::memory {
namespace {

class CudaPoolTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::device_available()) {
      GTEST_SKIP() << "no CUDA device";
    }
    // Non-blocking streams: no implicit ordering with the default stream hides a missing wait.
    ASSERT_EQ(cudaStreamCreateWithFlags(&first_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&second_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (first_ != nullptr) {
      cudaStreamDestroy(first_);
      cudaStreamDestroy(second_);
    }
  }
  cudaStream_t first_ = nullptr;
  cudaStream_t second_ = nullptr;
};

TEST_F(CudaPoolTest, DefaultStreamIsTheDevicesAndMemoryIsDeviceMemory) {
  CudaAsyncResource upstream(0);
  Pool pool(upstream, PoolOptions{.name = "cuda"});
  EXPECT_EQ(pool.stream(), Stream::cuda_default(0));
  auto values = borrow_temporary<float>(pool, 1000, "values");
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, values.data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_TRUE(values.device().is_cuda());
  values.release();
  pool.trim();
  EXPECT_EQ(pool.stats().reserved_bytes, 0U);
}

TEST_F(CudaPoolTest, BlockFreedOnOneStreamIsReusedOnAnotherAfterItsWork) {
  CudaAsyncResource upstream(0);
  Pool pool(upstream, PoolOptions{.name = "cuda"});
  const Stream a = Stream::from_native(Device::cuda(0), first_);
  const Stream b = Stream::from_native(Device::cuda(0), second_);
  constexpr std::size_t bytes = std::size_t{64} << 20;

  // Stream a is held back by a host callback until b's work is enqueued: only the pool's
  // stream ordering can make b's memset land after a's.
  std::atomic<bool> release{false};
  auto hold = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) {
    }
  };
  ASSERT_EQ(cudaLaunchHostFunc(first_, hold, &release), cudaSuccess);
  const Block written = pool.allocate(bytes, "first", a);
  ASSERT_EQ(cudaMemsetAsync(written.pointer, 1, bytes, first_), cudaSuccess);
  pool.deallocate(written);  // a's memset has not even started

  const Block reused = pool.allocate(bytes, "second", b);
  EXPECT_EQ(reused.pointer, written.pointer);
  EXPECT_EQ(pool.stats().hits, 1U);
  ASSERT_EQ(cudaMemsetAsync(reused.pointer, 2, bytes, second_), cudaSuccess);
  release = true;
  ASSERT_EQ(cudaStreamSynchronize(second_), cudaSuccess);
  std::vector<std::uint8_t> host(bytes);
  ASSERT_EQ(cudaMemcpy(host.data(), reused.pointer, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  std::size_t stale = 0;
  for (const auto value : host) {
    stale += value != 2 ? 1 : 0;
  }
  EXPECT_EQ(stale, 0U) << "work of the first stream landed after the second stream's";
  pool.deallocate(reused);
  cudaDeviceSynchronize();
}

// The tests' copy helpers report a failed copy instead of leaving the vector unfilled.
TEST_F(CudaPoolTest, TestCopiesThrowWhenCudaRefusesTheCopy) {
  const ArrayView<const std::int32_t> nowhere(nullptr, 4);  // cudaMemcpy: cudaErrorInvalidValue
  EXPECT_THROW((void)test::copy_to_host(nowhere), CudaError);
}

}  // namespace
}  // namespace afem::memory
