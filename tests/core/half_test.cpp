#include "gradscope/core/stats/half.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gradscope {
namespace {

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
    } else {
      EXPECT_EQ(float_to_half(f), h) << "half bits " << h;
    }
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest denormal
  EXPECT_EQ(half_to_float(0x03ff), 1023 * std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);   // below the halfway point: max finite
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);   // halfway rounds to even, which is Inf
  EXPECT_EQ(float_to_half(1e-9f), 0x0000);      // underflows to zero
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -24)), 0x0002);  // tie between 1 and 2 -> even
  EXPECT_EQ(float_to_half(std::ldexp(2.5f, -24)), 0x0002);  // tie between 2 and 3 -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even mantissa
}

TEST(BFloat16, EveryValueRoundTripsAndRoundsToNearestEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(f))));
    } else {
      EXPECT_EQ(float_to_bfloat16(f), b);
    }
  }
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

}  // namespace
}  // namespace gradscope
