// Pruning of never-read rows: compact fp32 table of the rows with a non-zero count, a remap
// table, and a default row for misses (zeros, or the count-weighted mean row).
#include <omp.h>

#include <cstring>
#include <limits>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"

namespace edo::kernels::detail {
namespace {

class PrunedTable final : public TableBase {
 public:
  PrunedTable(std::uint64_t rows, std::uint32_t dim) : TableBase("pruned", rows, dim), remap_(rows * 4, false), dflt_(dim * 4) {}
  std::uint64_t device_bytes() const override { return rows() * 4 + kept_ * dim() * 4 + dim() * 4; }
  double bytes_read_per_row() const override { return 4.0 * dim() + 4.0; }
  bool needs_retraining() const override { return true; }
  PrunedView view() const { return PrunedView{remap_.as<std::int32_t>(), rows_.as<float>(), dflt_.as<float>(), dim()}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    const PrunedView v = view();
    for (std::uint64_t i = 0; i < count; ++i)
      std::memcpy(out + i * dim(), pruned_row(v, static_cast<std::int64_t>(first + i)), dim() * 4);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::Pruned;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"remap", remap_.data(), remap_.size()}, {"rows", rows_.data(), kept_ * dim() * 4}, {"default", dflt_.data(), dflt_.size()}};
    f.scalars = {{"kept", static_cast<double>(kept_)}};
    return f;
  }
  void build(const float* w, const std::uint64_t* counts, bool mean_default) {
    const std::uint64_t R = rows();
    const std::uint32_t D = dim();
    auto* remap = remap_.as<std::int32_t>();
    kept_ = 0;
    for (std::uint64_t r = 0; r < R; ++r) remap[r] = (!counts || counts[r] > 0) ? static_cast<std::int32_t>(kept_++) : -1;
    if (kept_ > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
      throw std::invalid_argument("strategy pruned: more than 2^31-1 kept rows");
    rows_ = HostBuffer(kept_ * D * 4, false);
    float* out = rows_.as<float>();
#pragma omp parallel for num_threads(num_threads()) schedule(static)
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(R); ++r)
      if (remap[r] >= 0) std::memcpy(out + static_cast<std::uint64_t>(remap[r]) * D, w + r * D, D * 4);
    if (mean_default && kept_ > 0) {
      std::vector<double> acc(D, 0.0);
      double tot = 0;
      for (std::uint64_t r = 0; r < R; ++r) {
        if (remap[r] < 0) continue;
        const double c = counts ? static_cast<double>(counts[r]) : 1.0;
        tot += c;
        for (std::uint32_t d = 0; d < D; ++d) acc[d] += c * w[r * D + d];
      }
      for (std::uint32_t d = 0; d < D; ++d) dflt_.as<float>()[d] = static_cast<float>(acc[d] / tot);
    }
  }
  std::uint64_t kept() const { return kept_; }

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().pruned_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

 private:
  HostBuffer remap_, rows_, dflt_;
  std::uint64_t kept_ = 0;
};

}  // namespace

std::unique_ptr<EncodedTable> encode_pruned(const StrategySpec& spec, const float* w, std::uint64_t rows,
                                            std::uint32_t dim, const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const std::string dflt = pr.choice("default", "zero", {"zero", "mean"});
  pr.done();
  if (rows > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("strategy pruned: tables above 2^31-1 rows are not supported");
  if (o.check_only) {
    if (size) {
      std::uint64_t kept = rows;
      if (o.counts) kept = static_cast<std::uint64_t>(std::count_if(o.counts, o.counts + rows, [](std::uint64_t c) { return c > 0; }));
      *size = {rows * 4 + kept * dim * 4 + dim * 4, 0, 4.0 * dim + 4.0};
    }
    return nullptr;
  }
  auto t = std::make_unique<PrunedTable>(rows, dim);
  t->build(w, o.counts, dflt == "mean");
  auto& p = t->params_mut();
  p["default"] = dflt;
  p["kept_rows"] = t->kept();
  p["counts"] = o.counts != nullptr;
  return t;
}

}  // namespace edo::kernels::detail
