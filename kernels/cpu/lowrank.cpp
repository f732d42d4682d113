// Low rank W ~ A B: truncated SVD through the (count-weighted) Gram matrix W^T C W, whose
// top-r eigenvectors are W's top-r right singular vectors V_r; then A = W V_r, B = V_r^T.
// For every fixed subspace the per-row projection is the best reconstruction, and the
// weighted Gram gives the subspace minimising the count-weighted error.
#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstring>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"

namespace edo::kernels::detail {
namespace {

class LowRankTable final : public TableBase {
 public:
  LowRankTable(std::uint64_t rows, std::uint32_t dim, std::uint32_t rank)
      : TableBase("lowrank", rows, dim), rank_(rank), a_(rows * rank * 4, false), b_(std::uint64_t{rank} * dim * 4) {}
  std::uint64_t device_bytes() const override { return (rows() * rank_ + std::uint64_t{rank_} * dim()) * 4; }
  double bytes_read_per_row() const override { return 4.0 * rank_; }
  LowRankView view() const { return LowRankView{a_.as<float>(), b_.as<float>(), rank_, dim()}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    cpu::kernels().lowrank_decode(view(), first, count, out);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::LowRank;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"a", a_.data(), a_.size()}, {"b", b_.data(), b_.size()}};
    f.scalars = {{"rank", rank_}};
    return f;
  }
  void fit(const float* w, const std::uint64_t* counts);

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    cpu::kernels().lowrank_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
  }

 private:
  std::uint32_t rank_;
  HostBuffer a_, b_;
};

void LowRankTable::fit(const float* w, const std::uint64_t* counts) {
  const std::int64_t R = static_cast<std::int64_t>(rows());
  const int D = static_cast<int>(dim());
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using MapF = Eigen::Map<const MatF>;
  constexpr std::int64_t kBlock = 8192;
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(D, D);
  const std::int64_t blocks = (R + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(num_threads())
  {
    Eigen::MatrixXf local = Eigen::MatrixXf::Zero(D, D);
    MatF scaled;
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t lo = b * kBlock, n = std::min(kBlock, R - lo);
      MapF blk(w + lo * D, n, D);
      if (counts) {
        scaled = blk;
        for (std::int64_t i = 0; i < n; ++i) scaled.row(i) *= std::sqrt(static_cast<float>(counts[lo + i]));
        local.noalias() += scaled.transpose() * scaled;
      } else {
        local.noalias() += blk.transpose() * blk;
      }
    }
#pragma omp critical
    gram += local.cast<double>();
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(gram);
  // Eigenvalues ascend: the last `rank` columns span the top subspace.
  Eigen::MatrixXf v = es.eigenvectors().rightCols(rank_).rowwise().reverse().cast<float>();  // D x r
  Eigen::Map<MatF> bmat(b_.as<float>(), rank_, D);
  bmat = v.transpose();
  float* a = a_.as<float>();
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t lo = b * kBlock, n = std::min(kBlock, R - lo);
    MapF blk(w + lo * D, n, D);
    Eigen::Map<MatF> out(a + lo * rank_, n, rank_);
    out.noalias() = blk * v;
  }
}

}  // namespace

std::unique_ptr<EncodedTable> encode_lowrank(const StrategySpec& spec, const float* w, std::uint64_t rows,
                                             std::uint32_t dim, const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const auto rank = static_cast<std::uint32_t>(pr.integer("rank", std::max<std::uint32_t>(1, dim / 8), 1, dim));
  pr.done();
  if (o.check_only) {
    if (size) *size = {(rows * rank + std::uint64_t{rank} * dim) * 4, 0, 4.0 * rank};
    return nullptr;
  }
  auto t = std::make_unique<LowRankTable>(rows, dim, rank);
  t->fit(w, o.counts);
  t->params_mut()["rank"] = rank;
  return t;
}

}  // namespace edo::kernels::detail
