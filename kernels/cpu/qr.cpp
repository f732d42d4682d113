// Quotient-remainder: Q (ceil(V/m) x D) and R (m x D) fitted by alternating (count-weighted)
// least squares, element-wise.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"

namespace edo::kernels::detail {
namespace {

class QrTable final : public TableBase {
 public:
  QrTable(std::uint64_t rows, std::uint32_t dim, std::uint64_t m, QrOp op)
      : TableBase("qr", rows, dim), m_(m), nq_((rows + m - 1) / m), op_(op), q_(nq_ * dim * 4), r_(m * dim * 4) {}
  std::uint64_t device_bytes() const override { return (nq_ + m_) * dim() * 4; }
  double bytes_read_per_row() const override { return 8.0 * dim(); }
  bool needs_retraining() const override { return true; }
  QrView view() const { return QrView{q_.as<float>(), r_.as<float>(), m_, dim(), op_}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    const QrView v = view();
    for (std::uint64_t i = 0; i < count; ++i)
      for (std::uint32_t d = 0; d < dim(); ++d) out[i * dim() + d] = qr_value(v, static_cast<std::int64_t>(first + i), d);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::QR;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"q", q_.data(), q_.size()}, {"r", r_.data(), r_.size()}};
    f.scalars = {{"m", static_cast<double>(m_)}, {"op", static_cast<double>(op_)}};
    return f;
  }
  void fit(const float* w, const std::uint64_t* counts, int iters);

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().qr_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

 private:
  std::uint64_t m_, nq_;
  QrOp op_;
  HostBuffer q_, r_;
};

void QrTable::fit(const float* w, const std::uint64_t* counts, int iters) {
  const std::uint64_t V = rows();
  const std::uint32_t D = dim();
  float* q = q_.as<float>();
  float* r = r_.as<float>();
  const bool mult = op_ == QrOp::Mult;
  for (std::uint64_t i = 0; i < m_ * D; ++i) r[i] = mult ? 1.f : 0.f;
  auto cnt = [&](std::uint64_t row) { return counts ? static_cast<double>(counts[row]) : 1.0; };
  for (int it = 0; it < iters; ++it) {
    // Q step: each quotient row sees rows q*m .. q*m+m-1.
#pragma omp parallel for num_threads(num_threads()) schedule(static)
    for (std::int64_t qi = 0; qi < static_cast<std::int64_t>(nq_); ++qi) {
      std::vector<double> num(D, 0.0), den(D, 0.0);
      for (std::uint64_t row = qi * m_; row < std::min(V, (qi + 1) * m_); ++row) {
        const double c = cnt(row);
        const float* rr = r + (row % m_) * D;
        for (std::uint32_t d = 0; d < D; ++d) {
          if (mult) {
            num[d] += c * w[row * D + d] * rr[d];
            den[d] += c * rr[d] * rr[d];
          } else {
            num[d] += c * (w[row * D + d] - rr[d]);
            den[d] += c;
          }
        }
      }
      for (std::uint32_t d = 0; d < D; ++d) q[qi * D + d] = den[d] > 0 ? static_cast<float>(num[d] / den[d]) : (mult ? 0.f : 0.f);
    }
    // R step: reduce over all rows with the same remainder.
    std::vector<double> num(m_ * D, 0.0), den(m_ * D, 0.0);
#pragma omp parallel num_threads(num_threads())
    {
      std::vector<double> ln(m_ * D, 0.0), ld(m_ * D, 0.0);
#pragma omp for schedule(static)
      for (std::int64_t row = 0; row < static_cast<std::int64_t>(V); ++row) {
        const double c = cnt(row);
        if (c == 0) continue;
        const float* qq = q + (row / m_) * D;
        const std::uint64_t j = row % m_;
        for (std::uint32_t d = 0; d < D; ++d) {
          if (mult) {
            ln[j * D + d] += c * w[row * D + d] * qq[d];
            ld[j * D + d] += c * qq[d] * qq[d];
          } else {
            ln[j * D + d] += c * (w[row * D + d] - qq[d]);
            ld[j * D + d] += c;
          }
        }
      }
#pragma omp critical
      for (std::uint64_t i = 0; i < m_ * D; ++i) {
        num[i] += ln[i];
        den[i] += ld[i];
      }
    }
    for (std::uint64_t i = 0; i < m_ * D; ++i)
      if (den[i] > 0) r[i] = static_cast<float>(num[i] / den[i]);
  }
}

}  // namespace

std::unique_ptr<EncodedTable> encode_qr(const StrategySpec& spec, const float* w, std::uint64_t rows, std::uint32_t dim,
                                        const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const auto m = static_cast<std::uint64_t>(pr.integer("m", 4, 1, 1ll << 40));
  const std::string op = pr.choice("op", "mult", {"mult", "add"});
  const int iters = static_cast<int>(pr.integer("iters", 4, 1, 100));
  pr.done();
  if (o.check_only) {
    const std::uint64_t mm = std::min<std::uint64_t>(m, rows);
    if (size) *size = {((rows + mm - 1) / mm + mm) * dim * 4, 0, 8.0 * dim};
    return nullptr;
  }
  auto t = std::make_unique<QrTable>(rows, dim, std::min<std::uint64_t>(m, rows), op == "add" ? QrOp::Add : QrOp::Mult);
  t->fit(w, o.counts, iters);
  auto& p = t->params_mut();
  p["m"] = std::min<std::uint64_t>(m, rows);
  p["op"] = op;
  p["iters"] = iters;
  return t;
}

}  // namespace edo::kernels::detail
