#include "internal/record_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace gradscope::tensorboard::internal {
namespace {

uint32_t unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

TEST(RecordFraming, Crc32cMatchesPublishedCheckValues) {
  // The CRC-32C check value (RFC 3720 B.4 and the Castagnoli catalogue).
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0').data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff').data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(RecordFraming, MaskIsTensorFlowsRotationAndOffset) {
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
  EXPECT_EQ(mask_crc(0x8000u), 0xa282ead8u + 1u);  // bit 15 rotates to bit 0
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
    EXPECT_EQ(unmask(mask_crc(crc)), crc);
    EXPECT_NE(mask_crc(crc), crc);
  }
}

TEST(RecordFraming, RecordIsLengthCrcDataCrc) {
  std::string out = "prefix";
  append_record(out, "abc");
  ASSERT_EQ(out.size(), 6 + kRecordOverhead + 3);
  const std::string r = out.substr(6);
  EXPECT_EQ(r.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  const auto le = [&](std::size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(r[at])) |
           static_cast<uint32_t>(static_cast<unsigned char>(r[at + 1])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(r[at + 2])) << 16 |
           static_cast<uint32_t>(static_cast<unsigned char>(r[at + 3])) << 24;
  };
  EXPECT_EQ(le(8), mask_crc(crc32c(r.data(), 8)));
  EXPECT_EQ(r.substr(12, 3), "abc");
  EXPECT_EQ(le(15), mask_crc(crc32c("abc", 3)));
}

}  // namespace
}  // namespace gradscope::tensorboard::internal
