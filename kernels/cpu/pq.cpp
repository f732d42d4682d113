// Product quantisation: weighted k-means per sub-space (fixed seed), uint8 codes.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"
#include "edo/kernels/workload.h"

namespace edo::kernels::detail {
namespace {

class PqTable final : public TableBase {
 public:
  PqTable(std::uint64_t rows, std::uint32_t dim, std::uint32_t m, std::uint32_t k)
      : TableBase("pq", rows, dim), m_(m), dsub_(dim / m), k_(k), codes_(rows * m, false), codebook_(std::uint64_t{m} * k * (dim / m) * 4) {}
  std::uint64_t device_bytes() const override { return rows() * m_ + std::uint64_t{m_} * k_ * dsub_ * 4; }
  double bytes_read_per_row() const override { return m_; }
  PqView view() const { return PqView{codes_.data(), codebook_.as<float>(), dim(), m_, dsub_, k_}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    const PqView v = view();
    for (std::uint64_t i = 0; i < count; ++i)
      for (std::uint32_t d = 0; d < dim(); ++d) out[i * dim() + d] = pq_value(v, static_cast<std::int64_t>(first + i), d);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::PQ;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"codes", codes_.data(), rows() * m_}, {"codebook", codebook_.data(), codebook_.size()}};
    f.scalars = {{"m", m_}, {"dsub", dsub_}, {"k", k_}};
    return f;
  }
  void train_and_encode(const float* w, const EncodeOptions& o, std::uint32_t iters, std::uint64_t sample);

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().pq_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

 private:
  std::uint32_t m_, dsub_, k_;
  HostBuffer codes_, codebook_;
};

void PqTable::train_and_encode(const float* w, const EncodeOptions& o, std::uint32_t iters, std::uint64_t sample) {
  const std::uint64_t R = rows();
  const std::uint32_t D = dim(), K = k_;  // ct keeps a stride of 256 (kPqCentroids)
  const auto& kern = cpu::kernels();
  const int T = num_threads();
  // Training rows: the most-read rows when counts are known (they carry the weighted error),
  // otherwise a seeded uniform sample.
  std::vector<std::int64_t> train;
  const std::uint64_t ns = std::min<std::uint64_t>(R, sample);
  if (o.counts) {
    std::vector<std::int64_t> order(R);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(ns), order.end(),
                      [&](std::int64_t a, std::int64_t b) { return o.counts[a] != o.counts[b] ? o.counts[a] > o.counts[b] : a < b; });
    train.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(ns));
  } else {
    auto perm = random_permutation(R, o.seed);
    train.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(ns));
  }
  std::vector<double> weight(ns);
  for (std::uint64_t i = 0; i < ns; ++i) weight[i] = o.counts ? std::max<double>(1e-3, static_cast<double>(o.counts[train[i]])) : 1.0;

  std::vector<float> x(ns * dsub_), ct(std::uint64_t{dsub_} * kPqCentroids), cent(std::uint64_t{K} * dsub_);
  std::vector<std::uint8_t> code(ns);
  float* cb = codebook_.as<float>();
  Rng rng(o.seed + 7);
  for (std::uint32_t s = 0; s < m_; ++s) {
    for (std::uint64_t i = 0; i < ns; ++i)
      std::memcpy(&x[i * dsub_], w + static_cast<std::uint64_t>(train[i]) * D + s * dsub_, dsub_ * 4);
    // Init: K distinct training points (repeats allowed when there are fewer than K).
    for (std::uint32_t c = 0; c < K; ++c) {
      const std::uint64_t pick = ns >= K ? (static_cast<std::uint64_t>(c) * ns) / K : c % ns;
      std::memcpy(&cent[c * dsub_], &x[pick * dsub_], dsub_ * 4);
    }
    for (std::uint32_t it = 0; it <= iters; ++it) {
      for (std::uint32_t c = 0; c < K; ++c)
        for (std::uint32_t j = 0; j < dsub_; ++j) ct[j * kPqCentroids + c] = cent[c * dsub_ + j];
      if (it == iters) break;
      kern.pq_assign(x.data(), static_cast<std::int64_t>(ns), dsub_, dsub_, K, ct.data(), code.data(), 1, T);
      std::vector<double> sum(std::uint64_t{K} * dsub_, 0.0), wsum(K, 0.0);
      for (std::uint64_t i = 0; i < ns; ++i) {
        const std::uint32_t c = code[i];
        wsum[c] += weight[i];
        for (std::uint32_t j = 0; j < dsub_; ++j) sum[c * dsub_ + j] += weight[i] * x[i * dsub_ + j];
      }
      for (std::uint32_t c = 0; c < K; ++c) {
        if (wsum[c] > 0) {
          for (std::uint32_t j = 0; j < dsub_; ++j) cent[c * dsub_ + j] = static_cast<float>(sum[c * dsub_ + j] / wsum[c]);
        } else {  // empty cluster: restart at a random training point
          std::memcpy(&cent[c * dsub_], &x[rng.below(ns) * dsub_], dsub_ * 4);
        }
      }
    }
    std::memcpy(cb + std::uint64_t{s} * K * dsub_, cent.data(), cent.size() * 4);
    kern.pq_assign(w + s * dsub_, static_cast<std::int64_t>(R), D, dsub_, K, ct.data(), codes_.data() + s, m_, T);
  }
}

std::uint32_t default_m(std::uint32_t D) {
  if (D % 4 == 0) return D / 4;
  if (D % 2 == 0) return D / 2;
  return D;
}

}  // namespace

std::unique_ptr<EncodedTable> encode_pq(const StrategySpec& spec, const float* w, std::uint64_t rows, std::uint32_t dim,
                                        const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const auto m = static_cast<std::uint32_t>(pr.integer("m", default_m(dim), 1, dim));
  const auto k = static_cast<std::uint32_t>(pr.integer("k", kPqCentroids, 2, kPqCentroids));
  const auto iters = static_cast<std::uint32_t>(pr.integer("iters", 10, 0, 1000));
  const auto sample = static_cast<std::uint64_t>(pr.integer("sample", 65536, 256, 1ll << 40));
  pr.done();
  if (dim % m != 0) throw std::invalid_argument("strategy pq: m=" + std::to_string(m) + " must divide dim " + std::to_string(dim));
  if (o.check_only) {
    if (size) *size = {rows * m + std::uint64_t{m} * k * (dim / m) * 4, 0, static_cast<double>(m)};
    return nullptr;
  }
  auto t = std::make_unique<PqTable>(rows, dim, m, k);
  t->train_and_encode(w, o, iters, sample);
  auto& p = t->params_mut();
  p["m"] = m;
  p["dsub"] = dim / m;
  p["centroids"] = k;
  p["iters"] = iters;
  p["sample"] = sample;
  return t;
}

}  // namespace edo::kernels::detail
