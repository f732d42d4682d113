// Multi-hash embeddings: buckets fitted to the fp32 weights by (count-weighted) least squares:
// exact block means for concat; damped Jacobi sweeps for sum.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"

namespace edo::kernels::detail {
namespace {

class MultiHashTable final : public TableBase {
 public:
  MultiHashTable(std::uint64_t rows, std::uint32_t dim, std::uint64_t buckets, std::uint32_t k, HashMode mode, std::uint64_t seed)
      : TableBase("multihash", rows, dim),
        buckets_(buckets), k_(k), mode_(mode), seed_(seed),
        width_(mode == HashMode::Concat ? dim / k : dim),
        table_(buckets * width_ * 4) {}
  std::uint64_t device_bytes() const override { return buckets_ * width_ * 4; }
  double bytes_read_per_row() const override { return 4.0 * width_ * k_; }
  bool needs_retraining() const override { return true; }
  MultiHashView view() const { return MultiHashView{table_.as<float>(), buckets_, seed_, dim(), k_, width_, mode_}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    const MultiHashView v = view();
    for (std::uint64_t i = 0; i < count; ++i)
      for (std::uint32_t d = 0; d < dim(); ++d) out[i * dim() + d] = multihash_value(v, static_cast<std::int64_t>(first + i), d);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::MultiHash;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"table", table_.data(), table_.size()}};
    f.scalars = {{"buckets", static_cast<double>(buckets_)}, {"k", k_}, {"width", width_},
                 {"mode", static_cast<double>(mode_)}, {"seed", static_cast<double>(seed_)}};
    return f;
  }
  void fit(const float* w, const std::uint64_t* counts, int iters);

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().multihash_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

 private:
  std::uint64_t buckets_;
  std::uint32_t k_;
  HashMode mode_;
  std::uint64_t seed_;
  std::uint32_t width_;
  HostBuffer table_;
};

void MultiHashTable::fit(const float* w, const std::uint64_t* counts, int iters) {
  const std::uint64_t R = rows();
  const std::uint32_t D = dim(), W = width_;
  float* t = table_.as<float>();
  const MultiHashView v = view();
  std::vector<float> next(buckets_ * W);
  std::vector<double> wsum(buckets_);
  const int sweeps = mode_ == HashMode::Concat ? 1 : iters;
  for (int it = 0; it < sweeps; ++it) {
    std::fill(next.begin(), next.end(), 0.f);
    std::fill(wsum.begin(), wsum.end(), 0.0);
    // Buckets are split among threads (bucket % T): no races, deterministic.
#pragma omp parallel num_threads(num_threads())
    {
      const int th = omp_get_thread_num(), T = omp_get_num_threads();
      std::vector<float> res(D);
      for (std::uint64_t r = 0; r < R; ++r) {
        const double c = counts ? static_cast<double>(counts[r]) : 1.0;
        if (c == 0) continue;
        bool computed = false;
        for (std::uint32_t i = 0; i < k_; ++i) {
          const std::uint64_t b = multihash_bucket(v, static_cast<std::int64_t>(r), i);
          if (static_cast<int>(b % T) != th) continue;
          const float* target;
          if (mode_ == HashMode::Concat) {
            target = w + r * D + i * W;
          } else {
            if (!computed) {  // residual of the current fit
              for (std::uint32_t d = 0; d < D; ++d) res[d] = w[r * D + d];
              for (std::uint32_t j = 0; j < k_; ++j) {
                const float* tb = t + multihash_bucket(v, static_cast<std::int64_t>(r), j) * W;
                for (std::uint32_t d = 0; d < D; ++d) res[d] -= tb[d];
              }
              computed = true;
            }
            target = res.data();
          }
          float* nb = next.data() + b * W;
          const float cf = static_cast<float>(c);
          for (std::uint32_t d = 0; d < W; ++d) nb[d] += cf * target[d];
          wsum[b] += c;
        }
      }
    }
#pragma omp parallel for num_threads(num_threads()) schedule(static)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(buckets_); ++b) {
      if (wsum[b] == 0) continue;
      const float inv = static_cast<float>(1.0 / wsum[b]);
      float* tb = t + b * W;
      const float* nb = next.data() + b * W;
      if (mode_ == HashMode::Concat) {
        for (std::uint32_t d = 0; d < W; ++d) tb[d] = nb[d] * inv;
      } else {  // damped Jacobi: every row's residual is shared by its k buckets
        const float damp = 1.f / static_cast<float>(k_);
        for (std::uint32_t d = 0; d < W; ++d) tb[d] += damp * nb[d] * inv;
      }
    }
  }
}

}  // namespace

std::unique_ptr<EncodedTable> encode_multihash(const StrategySpec& spec, const float* w, std::uint64_t rows,
                                               std::uint32_t dim, const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const auto buckets = static_cast<std::uint64_t>(pr.integer("buckets", std::max<std::int64_t>(1, static_cast<std::int64_t>(rows / 10)), 1, 1ll << 40));
  const auto k = static_cast<std::uint32_t>(pr.integer("k", 2, 1, 16));
  const std::string mode = pr.choice("mode", "sum", {"sum", "concat"});
  const int iters = static_cast<int>(pr.integer("iters", 6, 1, 100));
  pr.done();
  if (mode == "concat" && dim % k != 0)
    throw std::invalid_argument("strategy multihash: mode=concat needs k=" + std::to_string(k) + " to divide dim " + std::to_string(dim));
  if (o.check_only) {
    const std::uint64_t width = mode == "concat" ? dim / k : dim;
    if (size) *size = {buckets * width * 4, 0, 4.0 * static_cast<double>(width) * k};
    return nullptr;
  }
  auto t = std::make_unique<MultiHashTable>(rows, dim, buckets, k, mode == "concat" ? HashMode::Concat : HashMode::Sum, o.seed);
  t->fit(w, o.counts, iters);
  auto& p = t->params_mut();
  p["buckets"] = buckets;
  p["k"] = k;
  p["mode"] = mode;
  p["iters"] = iters;
  p["seed"] = o.seed;
  return t;
}

}  // namespace edo::kernels::detail
