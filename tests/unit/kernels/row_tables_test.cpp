// fp32/fp16/bf16/fp8/int8/int4: encode/decode bounds, exact byte formulas, backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common.h"
#include "edo/kernels/formats/row_formats.h"

using namespace edo::kernels;
using namespace edo::kernels::test;

TEST(RowFormats, ExactByteFormulas) {
  for (std::uint32_t D : {1u, 7u, 8u, 16u, 24u, 64u, 100u, 128u, 129u}) {
    const std::uint64_t R = 37;
    auto w = weights(R, D);
    auto rb = [](std::uint64_t x) { return (x + 15) / 16 * 16; };
    EXPECT_EQ(enc("fp32", w, R, D)->device_bytes(), R * 4 * D);
    EXPECT_EQ(enc("fp16", w, R, D)->device_bytes(), R * 2 * D);
    EXPECT_EQ(enc("bf16", w, R, D)->device_bytes(), R * 2 * D);
    EXPECT_EQ(enc("fp8", w, R, D)->device_bytes(), R * rb(D + 4));
    EXPECT_EQ(enc("fp8:scale=table", w, R, D)->device_bytes(), R * rb(D) + 4);
    EXPECT_EQ(enc("int8", w, R, D)->device_bytes(), R * rb(D + 8));
    EXPECT_EQ(enc("int4", w, R, D)->device_bytes(), R * rb((D + 1) / 2 + 4));
    EXPECT_EQ(enc("int8", w, R, D)->host_bytes(), 0u);
    EXPECT_EQ(enc("int4", w, R, D)->bytes_read_per_row(), static_cast<double>(rb((D + 1) / 2 + 4)));
  }
  // D = 128: the FBGEMM-style sizes.
  EXPECT_EQ(int8_row_bytes(128), 144u);
  EXPECT_EQ(int4_row_bytes(128), 80u);
}

TEST(RowFormats, Fp16AndBf16AtTheirPrecision) {
  const std::uint64_t R = 200;
  const std::uint32_t D = 33;
  auto w = weights(R, D, 3, 10.f);
  auto h = decode_all(*enc("fp16", w, R, D));
  auto b = decode_all(*enc("bf16", w, R, D));
  for (std::size_t i = 0; i < w.size(); ++i) {
    const float a = std::fabs(w[i]);
    EXPECT_LE(std::fabs(h[i] - w[i]), std::max(a * std::ldexp(1.f, -11), std::ldexp(1.f, -25)) * 1.0001f);
    EXPECT_LE(std::fabs(b[i] - w[i]), a * std::ldexp(1.f, -8) * 1.0001f);
  }
}

TEST(RowFormats, Int8AndInt4WithinHalfAStep) {
  const std::uint64_t R = 300;
  for (std::uint32_t D : {5u, 64u, 127u}) {
    auto w = weights(R, D, 11, 3.f);
    w[0] = 1e-3f;  // a row with a tiny range too
    for (std::uint32_t d = 0; d < D; ++d) w[D + d] = 0.25f;  // constant row
    for (int bits : {8, 4}) {
      auto t = enc(bits == 8 ? "int8" : "int4", w, R, D);
      auto x = decode_all(*t);
      for (std::uint64_t r = 0; r < R; ++r) {
        float lo = w[r * D], hi = lo;
        for (std::uint32_t d = 0; d < D; ++d) {
          lo = std::min(lo, w[r * D + d]);
          hi = std::max(hi, w[r * D + d]);
        }
        // The step the format stored (fp16 for int4), read back from the row.
        const FormatData f = t->format_data();
        const auto* row = static_cast<const std::uint8_t*>(f.array("rows").data) + r * f.row_bytes;
        const float step = bits == 8 ? int8_row_scale(row, D) : int4_row_scale(row, D);
        const float nominal = (hi - lo) / (bits == 8 ? 255.f : 15.f);
        if (hi > lo) {
          EXPECT_LE(step, nominal * (bits == 8 ? 1.0001f : 1.002f) + 1e-7f);
        }
        for (std::uint32_t d = 0; d < D; ++d) {
          const float err = std::fabs(x[r * D + d] - w[r * D + d]);
          ASSERT_LE(err, step * 0.5f + 4e-7f * (std::fabs(lo) + std::fabs(hi)) + 1e-7f)
              << "bits " << bits << " D " << D << " row " << r << " d " << d;
        }
      }
    }
  }
}

TEST(RowFormats, Fp8PerRowAndPerTableScale) {
  const std::uint64_t R = 100;
  const std::uint32_t D = 32;
  auto w = weights(R, D, 5);
  for (const char* spec : {"fp8", "fp8:scale=table"}) {
    auto x = decode_all(*enc(spec, w, R, D));
    double num = 0, den = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      num += (x[i] - w[i]) * (x[i] - w[i]);
      den += w[i] * w[i];
    }
    EXPECT_LT(std::sqrt(num / den), 0.05) << spec;  // 3 mantissa bits: ~2-3 % relative
  }
  // Per-row scale: the largest element of each row is exact up to e4m3 rounding of 448 (exact).
  auto x = decode_all(*enc("fp8", w, R, D));
  for (std::uint64_t r = 0; r < R; ++r) {
    std::uint32_t am = 0;
    for (std::uint32_t d = 1; d < D; ++d)
      if (std::fabs(w[r * D + d]) > std::fabs(w[r * D + am])) am = d;
    EXPECT_NEAR(x[r * D + am], w[r * D + am], std::fabs(w[r * D + am]) * 1e-6);
  }
}

TEST(RowFormats, ErrorOrderingAndFp32IsExact) {
  const std::uint64_t R = 500;
  const std::uint32_t D = 64;
  auto w = weights(R, D, 9);
  auto err = [&](const char* s) {
    auto t = enc(s, w, R, D);
    return reconstruction_error(*t, w.data(), nullptr);
  };
  EXPECT_EQ(err("fp32"), 0.0);
  const double e16 = err("fp16"), eb = err("bf16"), e8 = err("int8"), e4 = err("int4"), ef8 = err("fp8");
  EXPECT_LT(e16, eb);
  EXPECT_LT(e8, e4);
  EXPECT_LT(e16, e8);
  EXPECT_LT(ef8, e4);
  EXPECT_GT(e4, 0.0);
  EXPECT_LT(e4, 0.2);
}

TEST(RowFormats, WeightedErrorIgnoresUnreadRows) {
  const std::uint64_t R = 10;
  const std::uint32_t D = 4;
  auto w = weights(R, D, 1);
  auto t = enc("int4", w, R, D);
  std::vector<std::uint64_t> counts(R, 0);
  EXPECT_EQ(reconstruction_error(*t, w.data(), counts.data()), 0.0);
  counts[3] = 5;
  std::vector<float> row(D);
  t->decode_rows(3, 1, row.data());
  double num = 0, den = 0;
  for (std::uint32_t d = 0; d < D; ++d) {
    num += (row[d] - w[3 * D + d]) * (row[d] - w[3 * D + d]);
    den += w[3 * D + d] * w[3 * D + d];
  }
  EXPECT_NEAR(reconstruction_error(*t, w.data(), counts.data()), std::sqrt(num / den), 1e-7);
}

TEST(RowFormats, BackwardScatterAddsRowGradients) {
  const std::uint64_t R = 50;
  const std::uint32_t D = 16;
  auto w = weights(R, D, 2);
  std::vector<std::int64_t> idx{3, 7, 3, 49, 0, 3};
  std::vector<std::int64_t> offsets{0, 2, 2, 6};  // bags: {3,7}, {}, {3,49,0,3}
  std::vector<float> psw{1.f, 2.f, 0.5f, -1.f, 1.f, 3.f};
  std::vector<float> grad(3 * D);
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  for (Pooling mode : {Pooling::Sum, Pooling::Mean}) {
    for (const char* s : {"fp32", "fp16", "bf16"}) {
      auto t = enc(s, w, R, D);
      ASSERT_TRUE(t->has_backward());
      auto before = decode_all(*t);
      t->backward(idx.data(), 6, offsets.data(), 3, psw.data(), mode, grad.data(), 0.5f);
      auto after = decode_all(*t);
      std::vector<double> expect(before.begin(), before.end());
      for (int b = 0; b < 3; ++b)
        for (auto p = offsets[b]; p < offsets[b + 1]; ++p) {
          double wt = psw[p];
          if (mode == Pooling::Mean) wt /= static_cast<double>(offsets[b + 1] - offsets[b]);
          for (std::uint32_t d = 0; d < D; ++d) expect[idx[p] * D + d] -= 0.5 * wt * grad[b * D + d];
        }
      const double tol = std::string(s) == "fp32" ? 1e-6 : (std::string(s) == "fp16" ? 2e-3 : 2e-2);
      for (std::size_t i = 0; i < expect.size(); ++i)
        ASSERT_NEAR(after[i], expect[i], tol * (1 + std::fabs(expect[i]))) << s << " " << i;
    }
  }
  auto q = enc("int8", w, R, D);
  EXPECT_FALSE(q->has_backward());
  EXPECT_THROW(q->backward(idx.data(), 6, offsets.data(), 3, nullptr, Pooling::Sum, grad.data(), 0.1f), std::logic_error);
}
