// fp32, fp16, bf16, fp8 (e4m3fn), int8 and int4 row-wise: one row of fixed size per table row.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"

namespace edo::kernels::detail {
namespace {

// Elements below which a training update runs on the calling thread alone (as in
// kernels/cpu/optimizer_update.cpp).
constexpr std::int64_t kTeamMinElements = std::int64_t{1} << 16;

class RowTable final : public TableBase {
 public:
  RowTable(const std::string& name, RowKind kind, std::uint64_t rows, std::uint32_t dim, bool fp8_row_scale)
      : TableBase(name, rows, dim),
        kind_(kind),
        row_bytes_(row_bytes_of(kind, dim, fp8_row_scale)),
        buf_(row_bytes_ * rows) {}

  std::uint64_t device_bytes() const override { return row_bytes_ * rows() + (table_scale_ != 0.f ? 4 : 0); }
  double bytes_read_per_row() const override { return static_cast<double>(row_bytes_); }
  bool has_backward() const override { return kind_ == RowKind::F32 || kind_ == RowKind::F16 || kind_ == RowKind::BF16; }

  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    cpu::kernels().row_decode[static_cast<int>(kind_)](view(), first, count, out);
  }

  FormatData format_data() const override {
    static const FormatKind kinds[] = {FormatKind::F32, FormatKind::F16, FormatKind::BF16,
                                       FormatKind::FP8, FormatKind::INT8, FormatKind::INT4};
    FormatData f;
    f.kind = kinds[static_cast<int>(kind_)];
    f.rows = rows();
    f.dim = dim();
    f.row_bytes = row_bytes_;
    f.arrays.push_back({"rows", buf_.data(), row_bytes_ * rows()});
    f.scalars["table_scale"] = table_scale_;
    return f;
  }

  RowView view() const { return RowView{buf_.data(), row_bytes_, dim(), table_scale_}; }
  std::uint8_t* row(std::uint64_t r) { return buf_.data() + r * row_bytes_; }

  void encode(const float* w, const std::string& fp8_scale);

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().row_lookup[static_cast<int>(kind_)](view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

  void apply_row_gradients(const std::int64_t* rows, const float* grads, std::int64_t count, float lr) override {
    const std::uint32_t D = dim();
    // A team only for work that outweighs starting it.
#pragma omp parallel for num_threads(num_threads()) schedule(static) if (count * static_cast<std::int64_t>(D) >= kTeamMinElements)
    for (std::int64_t i = 0; i < count; ++i) {
      std::uint8_t* p = row(static_cast<std::uint64_t>(rows[i]));
      const float* g = grads + static_cast<std::uint64_t>(i) * D;
      if (kind_ == RowKind::F32) {
        float* x = reinterpret_cast<float*>(p);
        for (std::uint32_t d = 0; d < D; ++d) x[d] -= lr * g[d];
      } else if (kind_ == RowKind::F16) {
        auto* x = reinterpret_cast<std::uint16_t*>(p);
        for (std::uint32_t d = 0; d < D; ++d) x[d] = float_to_half(half_to_float(x[d]) - lr * g[d]);
      } else {
        auto* x = reinterpret_cast<std::uint16_t*>(p);
        for (std::uint32_t d = 0; d < D; ++d) x[d] = float_to_bf16(bf16_to_float(x[d]) - lr * g[d]);
      }
    }
  }

 private:
  RowKind kind_;
  std::uint64_t row_bytes_;
  HostBuffer buf_;
  float table_scale_ = 0.f;
};

void minmax(const float* x, std::uint32_t n, float& lo, float& hi) {
  lo = x[0];
  hi = x[0];
  for (std::uint32_t i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
}

void RowTable::encode(const float* w, const std::string& fp8_scale) {
  const std::uint32_t D = dim();
  const std::int64_t R = static_cast<std::int64_t>(rows());
  if (kind_ == RowKind::FP8 && fp8_scale == "table") {
    float amax = 0.f;
#pragma omp parallel for num_threads(num_threads()) reduction(max : amax)
    for (std::int64_t i = 0; i < R * D; ++i) amax = std::max(amax, std::fabs(w[i]));
    table_scale_ = amax > 0.f ? amax / kE4M3Max : 1.f;
  }
  bool bad_range = false;
#pragma omp parallel for num_threads(num_threads()) schedule(static) reduction(|| : bad_range)
  for (std::int64_t r = 0; r < R; ++r) {
    const float* x = w + static_cast<std::uint64_t>(r) * D;
    std::uint8_t* p = row(static_cast<std::uint64_t>(r));
    switch (kind_) {
      case RowKind::F32: std::memcpy(p, x, D * sizeof(float)); break;
      case RowKind::F16: {
        auto* h = reinterpret_cast<std::uint16_t*>(p);
        for (std::uint32_t d = 0; d < D; ++d) h[d] = float_to_half(x[d]);
        break;
      }
      case RowKind::BF16: {
        auto* h = reinterpret_cast<std::uint16_t*>(p);
        for (std::uint32_t d = 0; d < D; ++d) h[d] = float_to_bf16(x[d]);
        break;
      }
      case RowKind::FP8: {
        float scale = table_scale_;
        if (scale == 0.f) {
          float amax = 0.f;
          for (std::uint32_t d = 0; d < D; ++d) amax = std::max(amax, std::fabs(x[d]));
          scale = amax > 0.f ? amax / kE4M3Max : 1.f;
          std::memcpy(p + D, &scale, 4);
        }
        const float inv = 1.f / scale;
        for (std::uint32_t d = 0; d < D; ++d) p[d] = float_to_e4m3(x[d] * inv);
        break;
      }
      case RowKind::INT8: {
        float lo, hi;
        minmax(x, D, lo, hi);
        const float scale = hi > lo ? (hi - lo) / 255.f : 1.f;
        const float inv = 1.f / scale;
        for (std::uint32_t d = 0; d < D; ++d) {
          const float q = std::nearbyint((x[d] - lo) * inv);
          p[d] = static_cast<std::uint8_t>(std::clamp(q, 0.f, 255.f));
        }
        std::memcpy(p + D, &scale, 4);
        std::memcpy(p + D + 4, &lo, 4);
        break;
      }
      case RowKind::INT4: {
        float lo, hi;
        minmax(x, D, lo, hi);
        if (!(std::fabs(lo) <= 65504.f && std::fabs(hi) <= 65504.f)) bad_range = true;
        const std::uint16_t bias_h = float_to_half(lo, Round::Down);
        const float bias = half_to_float(bias_h);
        std::uint16_t scale_h = float_to_half(hi > bias ? (hi - bias) / 15.f : 1.f, Round::Up);
        float scale = half_to_float(scale_h);
        // (hi - bias)/15 was itself rounded: make sure bias + 15*scale still covers hi.
        while (hi > bias && fma_f(15.f, scale, bias) < hi) {
          ++scale_h;
          scale = half_to_float(scale_h);
        }
        if (scale == 0.f) {  // (hi - bias)/15 below fp16's smallest subnormal
          scale_h = float_to_half(1.f);
          scale = 1.f;
        }
        const float inv = 1.f / scale;
        const std::uint64_t cb = int4_code_bytes(D);
        std::memset(p, 0, cb);
        for (std::uint32_t d = 0; d < D; ++d) {
          const float qf = std::clamp(std::nearbyint((x[d] - bias) * inv), 0.f, 15.f);
          p[d >> 1] |= static_cast<std::uint8_t>(static_cast<std::uint32_t>(qf) << ((d & 1u) * 4u));
        }
        std::memcpy(p + cb, &scale_h, 2);
        std::memcpy(p + cb + 2, &bias_h, 2);
        break;
      }
    }
  }
  if (bad_range) throw std::invalid_argument("int4: weights outside the fp16 range (|x| > 65504) cannot be encoded");
}

}  // namespace

std::unique_ptr<EncodedTable> encode_row_format(const StrategySpec& spec, const float* w, std::uint64_t rows,
                                                std::uint32_t dim, const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  RowKind kind = RowKind::F32;
  std::string fp8_scale = "row";
  if (spec.name == "fp16") kind = RowKind::F16;
  else if (spec.name == "bf16") kind = RowKind::BF16;
  else if (spec.name == "fp8") {
    kind = RowKind::FP8;
    fp8_scale = pr.choice("scale", "row", {"row", "table"});
  } else if (spec.name == "int8") kind = RowKind::INT8;
  else if (spec.name == "int4") kind = RowKind::INT4;
  pr.done();
  if (o.check_only) {
    const std::uint64_t rb = row_bytes_of(kind, dim, fp8_scale == "row");
    if (size) *size = {rb * rows + (kind == RowKind::FP8 && fp8_scale == "table" ? 4 : 0), 0, static_cast<double>(rb)};
    return nullptr;
  }
  auto t = std::make_unique<RowTable>(spec.name, kind, rows, dim, fp8_scale == "row");
  t->encode(w, fp8_scale);
  auto& p = t->params_mut();
  if (kind == RowKind::FP8) {
    p["scale"] = fp8_scale;
    p["format"] = "e4m3fn";
  }
  p["row_bytes"] = row_bytes_of(kind, dim, fp8_scale == "row");
  return t;
}

}  // namespace edo::kernels::detail
