// Per-element math of the formats: fp16, bf16, fp8 e4m3fn conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "edo/kernels/workload.h"
#include "edo/kernels/formats/bf16.h"
#include "edo/kernels/formats/fp16.h"
#include "edo/kernels/formats/fp8_e4m3.h"

using namespace edo::kernels;

namespace {
// Exact value of a half, computed independently of half_to_float.
double half_ref(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
// Nearest-even half for a finite double by search over all halves.
std::uint16_t half_nearest_ref(double x) {
  std::uint16_t best = 0;
  double bd = INFINITY;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const double v = half_ref(static_cast<std::uint16_t>(h));
    if (std::isnan(v) || std::isinf(v)) continue;
    const double d = std::fabs(v - x);
    if (d < bd || (d == bd && (h & 1) == 0 && (best & 1) == 1)) {
      bd = d;
      best = static_cast<std::uint16_t>(h);
    }
  }
  if (std::fabs(x) >= 65520.0) return x > 0 ? 0x7c00 : 0xfc00;
  if ((best & 0x7fff) == 0) best = std::signbit(x) ? 0x8000 : 0;
  return best;
}
}  // namespace

TEST(Fp16, DecodesEveryHalfExactly) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<std::uint16_t>(h));
    const double r = half_ref(static_cast<std::uint16_t>(h));
    if (std::isnan(r)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {  // value and sign
      EXPECT_EQ(static_cast<double>(f), r) << std::hex << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0);
    }
  }
}

TEST(Fp16, RoundTripsEveryHalf) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    EXPECT_EQ(float_to_half(half_to_float(static_cast<std::uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // tie at max -> even -> inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even (0)
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);      // 1.5 ulp -> 2
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  Rng rng(1);
  for (int i = 0; i < 1000; ++i) {
    const float x = static_cast<float>(std::ldexp(rng.uniform() * 2 - 1, static_cast<int>(rng.below(40)) - 26));
    ASSERT_EQ(float_to_half(x), half_nearest_ref(x)) << x;
  }
}

TEST(Fp16, DirectedRoundingBracketsTheValue) {
  Rng rng(2);
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(std::ldexp(rng.uniform() * 2 - 1, static_cast<int>(rng.below(36)) - 20));
    const float lo = half_to_float(float_to_half(x, Round::Down));
    const float hi = half_to_float(float_to_half(x, Round::Up));
    ASSERT_LE(lo, x);
    ASSERT_GE(hi, x);
    const float ne = half_to_float(float_to_half(x));
    ASSERT_TRUE(ne == lo || ne == hi) << x;
    if (lo != hi) {
      ASSERT_EQ(float_to_half(hi) - float_to_half(lo), x > 0 ? 1 : -1) << x;
    }
  }
}

TEST(Bf16, RoundsToNearestEvenWithinPrecision) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), b);
  }
  Rng rng(3);
  for (int i = 0; i < 100000; ++i) {
    const float x = rng.normal() * 100.f;
    const float y = bf16_to_float(float_to_bf16(x));
    ASSERT_LE(std::fabs(x - y), std::ldexp(std::fabs(x), -8) * 1.0000001f) << x;  // half an ulp (2^-7 rel)
  }
}

TEST(Fp8E4M3, KnownValuesAndRoundTrip) {
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
  EXPECT_EQ(float_to_e4m3(1000.f), 0x7e);   // saturates
  EXPECT_EQ(float_to_e4m3(-1000.f), 0xfe);
  EXPECT_EQ(float_to_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(float_to_e4m3(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // tie -> even (0)
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);                // tie between 1 and 1.125 -> even
  for (std::uint32_t b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(static_cast<std::uint8_t>(b))), b);
  }
  // Nearest: |x - q(x)| <= half the gap to the neighbour.
  Rng rng(4);
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>((rng.uniform() * 2 - 1) * 440);
    const float q = e4m3_to_float(float_to_e4m3(x));
    float best = INFINITY;
    for (std::uint32_t b = 0; b < 256; ++b) {
      if ((b & 0x7f) == 0x7f) continue;
      best = std::min(best, std::fabs(e4m3_to_float(static_cast<std::uint8_t>(b)) - x));
    }
    ASSERT_EQ(std::fabs(q - x), best) << x;
  }
}
