#include <gtest/gtest.h>

#include "arenafem/memory/config.hpp"
#include "arenafem/memory/device.hpp"
#include "arenafem/memory/error.hpp"
#include "arenafem/memory/owned_stream.hpp"
#include "support/backend.hpp"

namespace afem::memory {
namespace {

TEST(Device, ParsesAndNamesDevices) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(3).name(), "cuda:3");
  EXPECT_EQ(Device::cpu().name(), "cpu");
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  EXPECT_NE(Device::cuda(0), Device::cpu());
}

TEST(Device, RejectsMalformedNamesWithTheText) {
  for (const char* text : {"gpu", "cuda:", "cuda:x", "cuda:1x", "cuda:-1", ""}) {
    try {
      (void)Device::parse(text);
      FAIL() << "accepted '" << text << "'";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(std::string("'") + text + "'"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_THROW((void)Device::cuda(-2), Error);
}

TEST(Stream, CpuStreamIsSynchronousAndEqualToItself) {
  const Stream stream = Stream::cpu();
  EXPECT_TRUE(stream.device().is_cpu());
  EXPECT_EQ(stream.native_handle(), nullptr);
  EXPECT_NO_THROW(stream.synchronize());
  EXPECT_NO_THROW(stream.wait_for(Stream::cpu()));
  EXPECT_THROW((void)Stream::from_native(Device::cpu(), reinterpret_cast<void*>(0x10)), Error);
}

TEST(OwnedStream, GivesTheCpuStreamOnTheCpuAndAStreamOfItsOwnOnCuda) {
  const OwnedStream cpu(Device::cpu());
  EXPECT_EQ(cpu.stream(), Stream::cpu());
  if constexpr (!has_cuda) {
    try {
      const OwnedStream cuda(Device::cuda(0));
      FAIL() << "a CUDA stream was created in a build without CUDA";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("rebuild with ARENAFEM_CUDA=ON"), std::string::npos);
    }
  } else if (test::device_available()) {
    const OwnedStream cuda(Device::cuda(0));
    EXPECT_TRUE(cuda.stream().device().is_cuda());
    EXPECT_NE(cuda.stream().native_handle(), nullptr);
    cuda.stream().synchronize();
  }
}

}  // namespace
}  // namespace afem::memory
