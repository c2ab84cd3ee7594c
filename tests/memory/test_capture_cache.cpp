// CaptureCache: capture and replay, release on erase/clear/eviction/reshape, failed captures,
// budgets and long run/clear cycles. Backend-generic: compiled by g++ on the OpenMP backend and
// by nvcc on the CUDA backend (where the replays are CUDA graphs).
#include "arenafem/memory/capture_cache.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "arenafem/memory/captured_for_each.hpp"
#include "arenafem/memory/config.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/pool.hpp"
#include "support/backend.hpp"
#include "support/fault_injection.hpp"

#if AFEM_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace afem::memory {
namespace {

/// tmp = a x + b
struct Affine {
  ArrayView<const double> x;
  ArrayView<const double> parameters;  ///< a, b
  ArrayView<double> tmp;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const {
    tmp[i] = parameters[0] * x[i] + parameters[1];
  }
};

/// y = tmp * tmp + replays (the static counter, bumped by one thread)
struct Square {
  ArrayView<const double> tmp;
  ArrayView<const double> counter;
  ArrayView<double> y;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const { y[i] = tmp[i] * tmp[i] + counter[0]; }
};

struct Bump {
  ArrayView<double> counter;
  AFEM_HOST_DEVICE void operator()(std::size_t /*i*/) const { counter[0] += 1.0; }
};

struct SetZero {
  ArrayView<double> values;
  AFEM_HOST_DEVICE void operator()(std::size_t i) const { values[i] = 0.0; }
};

/// The step under test: y = (a x + b)^2 + k on the k-th replay, in 20 launches (18 of them
/// bumping a scratch value that nothing reads) through scratch and a static counter.
void record_step(CaptureRecorder& recorder) {
  const ArrayView<const double> x = recorder.input<double>(0);
  const ArrayView<const double> parameters = recorder.input<double>(1);
  const ArrayView<double> y = recorder.output<double>(0);
  const ArrayView<double> counter = recorder.static_buffer<double>(1, "counter");
  captured_for_each(recorder, 1, SetZero{counter});
  auto tmp = borrow_temporary<double>(recorder.scratch(), x.size(), "tmp");
  captured_for_each(recorder, x.size(), Affine{x, parameters, tmp.view()});
  captured_for_each(recorder, 1, Bump{counter});
  captured_for_each(recorder, x.size(), Square{tmp.view(), counter, y});
}

/// counter = 0 when flag[0] is set
struct ResetIf {
  ArrayView<const double> flag;
  ArrayView<double> counter;
  AFEM_HOST_DEVICE void operator()(std::size_t /*i*/) const {
    if (flag[0] != 0.0) {
      counter[0] = 0.0;
    }
  }
};

/// The step with a counter of replays kept in a static buffer: input 2 is a flag that resets it.
void record_counting_step(CaptureRecorder& recorder) {
  const ArrayView<const double> x = recorder.input<double>(0);
  const ArrayView<const double> parameters = recorder.input<double>(1);
  const ArrayView<const double> reset = recorder.input<double>(2);
  const ArrayView<double> y = recorder.output<double>(0);
  const ArrayView<double> counter = recorder.static_buffer<double>(1, "counter");
  captured_for_each(recorder, 1, ResetIf{reset, counter});
  auto tmp = borrow_temporary<double>(recorder.scratch(), x.size(), "tmp");
  captured_for_each(recorder, x.size(), Affine{x, parameters, tmp.view()});
  captured_for_each(recorder, 1, Bump{counter});
  captured_for_each(recorder, x.size(), Square{tmp.view(), counter, y});
}

/// A stream of this build's device that the fixture owns (CUDA graphs cannot capture the legacy
/// default stream).
class CaptureCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::device_available()) {
      GTEST_SKIP() << "no device for this build's backend";
    }
#if AFEM_HAS_CUDA
    cudaStream_t native = nullptr;
    ASSERT_EQ(cudaStreamCreate(&native), cudaSuccess);
    native_ = native;
    stream_ = Stream::from_native(Device::cuda(0), native_);
#endif
    pool_ = std::make_unique<Pool>(device_resource(),
                                   PoolOptions{.name = "capture-test", .stream = stream_});
  }
  void TearDown() override {
    pool_.reset();
#if AFEM_HAS_CUDA
    if (native_ != nullptr) {
      (void)cudaStreamDestroy(static_cast<cudaStream_t>(native_));
    }
#endif
  }

  /// The host inputs and the expected output of the step for `x`, a, b and replay `k`.
  static std::vector<double> expected(const std::vector<double>& x, double a, double b, double k) {
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double t = a * x[i] + b;
      y[i] = t * t + k;
    }
    return y;
  }

  /// Runs `key` once with host arrays copied to and from the device.
  std::vector<double> run(CaptureCache<int>& cache, int key, const std::vector<double>& x, double a,
                          double b, const CaptureStep& step = record_step) {
    auto device_x = borrow_temporary<double>(*pool_, x.size(), "test.x");
    auto device_p = borrow_temporary<double>(*pool_, 2, "test.parameters");
    auto device_y = borrow_temporary<double>(*pool_, x.size(), "test.y");
    test::copy_to_device(device_x.view(), x);
    test::copy_to_device(device_p.view(), std::vector<double>{a, b});
    const StagedArray inputs[] = {staged_input(device_x.view()), staged_input(device_p.view())};
    const StagedArray outputs[] = {staged_output(device_y.view())};
    cache.run(key, stream_, inputs, outputs, step);
    stream_.synchronize();
    return test::copy_to_host(ArrayView<const double>(device_y.view()));
  }

  static std::vector<double> ramp(std::size_t n, double scale) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = scale * std::sin(static_cast<double>(i));
    }
    return x;
  }

  Stream stream_;
  void* native_ = nullptr;
  std::unique_ptr<Pool> pool_;
};

TEST_F(CaptureCacheTest, ReplaysGiveTheResultOfTheStepRunDirectly) {
  CaptureCache<int> cache(*pool_, {.name = "step"});
  for (int call = 0; call < 200; ++call) {
    const std::vector<double> x = ramp(1000, 1.0 + call);
    const double a = 0.5 * call;
    const double b = -1.0 + call;
    ASSERT_EQ(run(cache, 7, x, a, b), expected(x, a, b, 1.0)) << "call " << call;
  }
  EXPECT_EQ(cache.stats().misses, 1U);
  EXPECT_EQ(cache.stats().hits, 199U);
  EXPECT_EQ(cache.stats().replays, 200U);
  EXPECT_EQ(cache.stats().entries, 1U);
  EXPECT_GT(cache.retained_bytes(7), 0U);
  EXPECT_EQ(cache.stats().retained_bytes, cache.retained_bytes(7));
}

TEST_F(CaptureCacheTest, StaticBuffersKeepTheirStateAcrossReplays) {
  CaptureCache<int> cache(*pool_);
  const std::vector<double> x = ramp(64, 2.0);
  auto device_x = borrow_temporary<double>(*pool_, x.size(), "test.x");
  auto device_p = borrow_temporary<double>(*pool_, 2, "test.parameters");
  auto flag = borrow_temporary<double>(*pool_, 1, "test.flag");
  auto device_y = borrow_temporary<double>(*pool_, x.size(), "test.y");
  test::copy_to_device(device_x.view(), x);
  test::copy_to_device(device_p.view(), std::vector<double>{1.0, 0.5});
  const StagedArray inputs[] = {staged_input(device_x.view()), staged_input(device_p.view()),
                                staged_input(flag.view())};
  const StagedArray outputs[] = {staged_output(device_y.view())};
  for (int replay = 1; replay <= 5; ++replay) {
    test::copy_to_device(flag.view(), std::vector<double>{replay == 1 ? 1.0 : 0.0});
    cache.run(1, stream_, inputs, outputs, record_counting_step);
    stream_.synchronize();
    EXPECT_EQ(test::copy_to_host(ArrayView<const double>(device_y.view())),
              expected(x, 1.0, 0.5, replay));
  }
}

TEST_F(CaptureCacheTest, ClearAndEraseGiveEverythingBackAndTheNextRunRecaptures) {
  const std::size_t live_before = pool_->stats().live_bytes;
  const std::size_t ledger_before = pool_->ledger().live_bytes();
  CaptureCache<int> cache(*pool_, {.name = "step"});
  const std::vector<double> x = ramp(500, 3.0);
  run(cache, 1, x, 2.0, 1.0);
  run(cache, 2, x, 2.0, 1.0);
  EXPECT_EQ(cache.stats().entries, 2U);
  EXPECT_GT(pool_->stats().live_bytes, live_before);
  const LedgerSnapshot ledger = pool_->ledger();
  ASSERT_NE(ledger.find("step[1].input0"), nullptr);
  EXPECT_EQ(ledger.find("step[1].input0")->live_bytes, Arena::block_size(500 * sizeof(double)));
  ASSERT_NE(ledger.find("step[2].scratch.chunks"), nullptr);
  EXPECT_GT(ledger.find("step[2].scratch.chunks")->live_bytes, 0U);

  EXPECT_TRUE(cache.erase(1));
  EXPECT_FALSE(cache.erase(1));
  EXPECT_FALSE(cache.contains(1));
  EXPECT_EQ(cache.stats().entries, 1U);
  EXPECT_EQ(pool_->ledger().find("step[1].input0")->live_bytes, 0U);
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0U);
  EXPECT_EQ(cache.stats().retained_bytes, 0U);
  EXPECT_EQ(pool_->stats().live_bytes, live_before);
  EXPECT_EQ(pool_->ledger().live_bytes(), ledger_before);

  EXPECT_EQ(run(cache, 1, x, -1.0, 4.0), expected(x, -1.0, 4.0, 1.0));
  EXPECT_EQ(cache.stats().misses, 3U);
}

TEST_F(CaptureCacheTest, ReleasingAfterQueuedReplaysKeepsTheirResults) {
  CaptureCache<int> cache(*pool_);
  const std::size_t n = 4096;
  const int replays = 32;
  const auto slices = static_cast<std::size_t>(replays);
  auto x = borrow_temporary<double>(*pool_, n * slices, "test.x");
  auto p = borrow_temporary<double>(*pool_, 2 * slices, "test.parameters");
  auto y = borrow_temporary<double>(*pool_, n * slices, "test.y");
  std::vector<double> host_x;
  std::vector<double> host_p;
  for (int r = 0; r < replays; ++r) {
    const std::vector<double> xr = ramp(n, r + 1.0);
    host_x.insert(host_x.end(), xr.begin(), xr.end());
    host_p.push_back(r);
    host_p.push_back(1.0);
  }
  test::copy_to_device(x.view(), host_x);
  test::copy_to_device(p.view(), host_p);
  // Enqueue all replays without waiting, each writing its own slice, then erase at once: the
  // release waits for the last replay before it gives the staging buffers back.
  for (int r = 0; r < replays; ++r) {
    const auto at = static_cast<std::size_t>(r);
    const StagedArray inputs[] = {staged_input(x.view().subview(at * n, n)),
                                  staged_input(p.view().subview(at * 2, 2))};
    const StagedArray outputs[] = {staged_output(y.view().subview(at * n, n))};
    cache.run(0, stream_, inputs, outputs, record_step);
  }
  EXPECT_TRUE(cache.erase(0));
#if AFEM_HAS_CUDA
  // erase() waited for the last replay: nothing of them is left on the stream.
  EXPECT_EQ(cudaStreamQuery(static_cast<cudaStream_t>(native_)), cudaSuccess);
#endif
  stream_.synchronize();
  const std::vector<double> result = test::copy_to_host(ArrayView<const double>(y.view()));
  for (int r = 0; r < replays; ++r) {
    const auto at = static_cast<std::ptrdiff_t>(r) * static_cast<std::ptrdiff_t>(n);
    const std::vector<double> slice(result.begin() + at,
                                    result.begin() + at + static_cast<std::ptrdiff_t>(n));
    ASSERT_EQ(slice, expected(ramp(n, r + 1.0), r, 1.0, 1.0)) << "replay " << r;
  }
}

TEST_F(CaptureCacheTest, ACaptureThatThrowsLeavesNoEntryAndNoBytes) {
  CaptureCache<int> cache(*pool_, {.name = "step"});
  const std::size_t live_before = pool_->stats().live_bytes;
  const std::vector<double> x = ramp(100, 1.0);
  EXPECT_THROW(run(cache, 3, x, 1.0, 1.0,
                   [](CaptureRecorder& recorder) {
                     record_step(recorder);
                     throw std::runtime_error("the step failed half-way");
                   }),
               std::runtime_error);
  EXPECT_EQ(cache.stats().entries, 0U);
  EXPECT_EQ(cache.stats().retained_bytes, 0U);
  EXPECT_EQ(cache.stats().failed_captures, 1U);
  EXPECT_FALSE(cache.contains(3));
  EXPECT_EQ(pool_->stats().live_bytes, live_before);
  // Work that throws when it runs (at the first replay on the CPU, during capture on CUDA).
  EXPECT_THROW(run(cache, 3, x, 1.0, 1.0,
                   [](CaptureRecorder& recorder) {
                     record_step(recorder);
                     recorder.launch([](const Stream&) { throw std::runtime_error("launch"); });
                   }),
               std::runtime_error);
  EXPECT_EQ(cache.stats().entries, 0U);
  EXPECT_EQ(cache.stats().failed_captures, 2U);
  EXPECT_EQ(cache.stats().replays, 0U);
  EXPECT_EQ(pool_->stats().live_bytes, live_before);
  // A static buffer after scratch could share memory with scratch given back: refused.
  EXPECT_THROW(run(cache, 3, x, 1.0, 1.0,
                   [](CaptureRecorder& recorder) {
                     (void)recorder.scratch();
                     (void)recorder.static_buffer<double>(1, "late");
                   }),
               Error);
  EXPECT_EQ(cache.stats().entries, 0U);
  // Scratch beyond what the entry reserved: OutOfMemory naming the label, nothing kept.
  CaptureCache<int> small(*pool_, {.name = "small", .scratch_bytes = 4096});
  try {
    run(small, 4, ramp(10000, 1.0), 1.0, 1.0);
    FAIL() << "a step that needs more scratch than reserved was captured";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("small[4].scratch"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(small.stats().entries, 0U);
  EXPECT_EQ(pool_->stats().live_bytes, live_before);
  // Both caches still work afterwards.
  EXPECT_EQ(run(cache, 3, x, 1.0, 1.0), expected(x, 1.0, 1.0, 1.0));
}

TEST_F(CaptureCacheTest, TheCaptureWindowTakesNothingFromUpstream) {
  CaptureCache<int> cache(*pool_);
  std::uint64_t upstream_at_start = 0;
  std::uint64_t upstream_at_end = 0;
  const std::vector<double> x = ramp(2000, 1.0);
  run(cache, 1, x, 1.0, 0.0, [&](CaptureRecorder& recorder) {
    upstream_at_start = pool_->stats().upstream_allocations;
    record_step(recorder);
    upstream_at_end = pool_->stats().upstream_allocations;
  });
  EXPECT_EQ(upstream_at_end, upstream_at_start);
}

TEST_F(CaptureCacheTest, ChangedShapesRecaptureOrAreRefusedPerPolicy) {
  CaptureCache<int> cache(*pool_);
  const std::vector<double> small = ramp(100, 1.0);
  const std::vector<double> large = ramp(300, 1.0);
  run(cache, 1, small, 1.0, 0.0);
  EXPECT_EQ(run(cache, 1, large, 2.0, 0.0), expected(large, 2.0, 0.0, 1.0));
  EXPECT_EQ(cache.stats().misses, 2U);
  EXPECT_EQ(cache.stats().entries, 1U);

  CaptureCache<int> strict(*pool_, {.on_shape_change = ShapeChange::error});
  run(strict, 1, small, 1.0, 0.0);
  const std::size_t live = pool_->stats().live_bytes;
  try {
    run(strict, 1, large, 2.0, 0.0);
    FAIL() << "a reshaped run was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("f64[100]"), std::string::npos) << message;
    EXPECT_NE(message.find("f64[300]"), std::string::npos) << message;
  }
  EXPECT_EQ(pool_->stats().live_bytes, live);
  EXPECT_EQ(run(strict, 1, small, 3.0, 1.0), expected(small, 3.0, 1.0, 1.0));
  EXPECT_EQ(strict.stats().misses, 1U);

  // A step that reads an input as another type is refused at capture.
  CaptureCache<int> typed(*pool_);
  EXPECT_THROW(run(typed, 1, small, 1.0, 0.0,
                   [](CaptureRecorder& recorder) { (void)recorder.input<float>(0); }),
               Error);
  EXPECT_THROW(run(typed, 1, small, 1.0, 0.0,
                   [](CaptureRecorder& recorder) { (void)recorder.input<double>(2); }),
               Error);
  EXPECT_EQ(typed.stats().entries, 0U);
}

TEST_F(CaptureCacheTest, TheBudgetEvictsTheLeastRecentlyUsedEntry) {
  const std::vector<double> x = ramp(1000, 1.0);
  std::size_t one_entry = 0;
  {
    CaptureCache<int> probe(*pool_, {.scratch_bytes = 64 << 10});
    run(probe, 0, x, 1.0, 0.0);
    one_entry = probe.retained_bytes(0);
  }
  CaptureCache<int> cache(*pool_, {.scratch_bytes = 64 << 10, .budget_bytes = 2 * one_entry + 1});
  run(cache, 1, x, 1.0, 0.0);
  run(cache, 2, x, 1.0, 0.0);
  run(cache, 1, x, 1.0, 0.0);  // 2 is now the least recently used
  EXPECT_EQ(run(cache, 3, x, 4.0, 0.0), expected(x, 4.0, 0.0, 1.0));
  EXPECT_TRUE(cache.contains(1));
  EXPECT_FALSE(cache.contains(2));
  EXPECT_TRUE(cache.contains(3));
  EXPECT_EQ(cache.stats().evictions, 1U);
  EXPECT_LE(cache.stats().retained_bytes, cache.options().budget_bytes);

  CaptureCache<int> tiny(*pool_, {.scratch_bytes = 64 << 10, .budget_bytes = one_entry / 2});
  EXPECT_THROW(run(tiny, 1, x, 1.0, 0.0), OutOfMemory);
  EXPECT_EQ(tiny.stats().entries, 0U);
}

TEST_F(CaptureCacheTest, StringKeysNameTheirEntries) {
  CaptureCache<std::string> cache(*pool_, {.name = "solver"});
  auto x = borrow_temporary<double>(*pool_, 10, "test.x");
  auto p = borrow_temporary<double>(*pool_, 2, "test.parameters");
  auto y = borrow_temporary<double>(*pool_, 10, "test.y");
  test::copy_to_device(x.view(), ramp(10, 1.0));
  test::copy_to_device(p.view(), std::vector<double>{1.0, 1.0});
  const StagedArray inputs[] = {staged_input(x.view()), staged_input(p.view())};
  const StagedArray outputs[] = {staged_output(y.view())};
  cache.run("pressure", stream_, inputs, outputs, record_step);
  stream_.synchronize();
  ASSERT_NE(pool_->ledger().find("solver[pressure].output0"), nullptr);
  EXPECT_GT(pool_->ledger().find("solver[pressure].output0")->live_bytes, 0U);
}

TEST_F(CaptureCacheTest, TenThousandRunClearCyclesLeaveMemoryWhereItStarted) {
  const std::vector<double> x = ramp(256, 1.0);
  auto device_x = borrow_temporary<double>(*pool_, x.size(), "test.x");
  auto device_p = borrow_temporary<double>(*pool_, 2, "test.parameters");
  auto device_y = borrow_temporary<double>(*pool_, x.size(), "test.y");
  test::copy_to_device(device_x.view(), x);
  test::copy_to_device(device_p.view(), std::vector<double>{1.0, 2.0});
  const StagedArray inputs[] = {staged_input(device_x.view()), staged_input(device_p.view())};
  const StagedArray outputs[] = {staged_output(device_y.view())};
  CaptureCache<int> cache(*pool_, {.scratch_bytes = 64 << 10});
  const std::size_t live_before = pool_->stats().live_bytes;
  cache.run(0, stream_, inputs, outputs, record_step);
  cache.clear();
  const PoolStats warm = pool_->stats();
  for (int cycle = 0; cycle < 10000; ++cycle) {
    cache.run(cycle % 3, stream_, inputs, outputs, record_step);
    cache.clear();
  }
  stream_.synchronize();
  const PoolStats after = pool_->stats();
  EXPECT_EQ(after.live_bytes, live_before);
  EXPECT_EQ(after.upstream_allocations, warm.upstream_allocations);
  EXPECT_EQ(after.upstream_frees, warm.upstream_frees);
  EXPECT_EQ(cache.stats().misses, 10001U);
  EXPECT_EQ(test::copy_to_host(ArrayView<const double>(device_y.view())),
            expected(x, 1.0, 2.0, 1.0));
}

// Fault injection: the first run of a key on a fresh pool fails at each of its upstream allocations
// in turn (all of them reserve staging and scratch before the capture window opens): an OutOfMemory
// naming the label, no entry and no retained bytes, the other entry intact, and a retry that
// computes the right result.
TEST_F(CaptureCacheTest, ACaptureSurvivesAFailureAtEachOfItsAllocations) {
  const std::vector<double> x = ramp(300, 1.0);
  const int faults = test::fail_each_allocation([&](int k) {
    bool failed = false;
    test::FaultyPool faulty;
    {
      auto device_x = borrow_temporary<double>(faulty.pool, x.size(), "test.x");
      auto device_p = borrow_temporary<double>(faulty.pool, 2, "test.parameters");
      auto device_y = borrow_temporary<double>(faulty.pool, x.size(), "test.y");
      test::copy_to_device(device_x.view(), x);
      test::copy_to_device(device_p.view(), std::vector<double>{2.0, 1.0});
      const StagedArray inputs[] = {staged_input(device_x.view()), staged_input(device_p.view())};
      const StagedArray outputs[] = {staged_output(device_y.view())};
      CaptureCache<int> cache(faulty.pool, {.name = "step", .scratch_bytes = 64 << 10});
      cache.run(0, stream_, inputs, outputs, record_step);  // an entry that must survive
      const std::size_t retained = cache.stats().retained_bytes;
      faulty.plan_fault(k);
      try {
        cache.run(1, stream_, inputs, outputs, record_step);
      } catch (const OutOfMemory& error) {
        failed = true;
        test::expect_names_a_label(error);
        EXPECT_FALSE(cache.contains(1)) << "fault " << k;
        EXPECT_EQ(cache.stats().entries, 1U) << "fault " << k;
        EXPECT_EQ(cache.stats().retained_bytes, retained) << "fault " << k;
      }
      faulty.clear_fault();
      cache.run(1, stream_, inputs, outputs, record_step);
      cache.run(0, stream_, inputs, outputs, record_step);
      stream_.synchronize();
      EXPECT_EQ(test::copy_to_host(ArrayView<const double>(device_y.view())),
                expected(x, 2.0, 1.0, 1.0))
          << "fault " << k;
    }
    EXPECT_EQ(faulty.pool.stats().live_bytes, 0U) << "fault " << k;
    // A fault that fired must have failed the operation (none swallowed).
    EXPECT_EQ(failed, faulty.resource.failures() > 0) << "fault " << k;
    return failed;
  });
  EXPECT_GE(faults, 3);
  std::printf("[ faults   ] capture: %d injected upstream faults, each survived\n", faults);
}

}  // namespace
}  // namespace afem::memory
