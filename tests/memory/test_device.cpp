#include <gtest/gtest.h>

#include "memory/device.hpp"
#include "memory/error.hpp"

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

}  // namespace
}  // namespace afem::memory
