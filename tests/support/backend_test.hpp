#pragma once

/// @file
/// BackendTest: a fixture with a Pool of this build's device memory and a step Arena over it,
/// skipping the test where the backend cannot run.

#include <gtest/gtest.h>

#include <memory>

#include "arenafem/memory/arena.hpp"
#include "arenafem/memory/device_resource.hpp"
#include "arenafem/memory/pool.hpp"
#include "support/backend.hpp"

namespace afem::test {

/// Owns `pool_` (device memory, "backend") and `arena_` ("step", 1 MiB chunks); both are released
/// in TearDown, arena first. Derived fixtures that build more call BackendTest::SetUp() first and
/// return if IsSkipped().
class BackendTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!device_available()) {
      GTEST_SKIP() << "no device for this build's backend";
    }
    pool_ = std::make_unique<memory::Pool>(memory::device_resource(),
                                           memory::PoolOptions{.name = "backend"});
    arena_ = std::make_unique<memory::Arena>(*pool_, memory::ArenaOptions{"step", 1 << 20, 0});
  }
  void TearDown() override {
    arena_.reset();
    pool_.reset();
  }

  std::unique_ptr<memory::Pool> pool_;
  std::unique_ptr<memory::Arena> arena_;
};

}  // namespace afem::test
