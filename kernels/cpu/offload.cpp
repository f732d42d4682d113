// Offload: fp32 table in host memory, a cache of C hot rows in device memory (on the CPU
// backend the "device" cache is a second host array; the hit rate is what matters). The LRU
// policy is edo/kernels/lru.h's; the CPU keeps a row -> slot map beside it (host memory, not
// counted in device bytes) so that its lookups need no set search.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

#include "cpu/encoders.h"
#include "edo/kernels/host_buffer.h"
#include "edo/kernels/lru.h"

namespace edo::kernels::detail {
namespace {

class OffloadTable final : public TableBase {
 public:
  OffloadTable(std::uint64_t rows, std::uint32_t dim, std::uint64_t cache_rows, bool lru, bool managed)
      : TableBase("offload", rows, dim), cache_rows_(cache_rows), lru_(lru), managed_(managed),
        host_(rows * dim * 4, false), cache_(cache_rows * dim * 4), slot_(rows * 4, false),
        lru_state_(lru ? std::make_unique<LruCache>(cache_rows) : nullptr) {}

  std::uint64_t device_bytes() const override { return device_bytes_of(rows(), dim(), cache_rows_, lru_); }
  static std::uint64_t device_bytes_of(std::uint64_t rows, std::uint32_t dim, std::uint64_t cache_rows, bool lru) {
    return cache_rows * dim * 4 + (lru ? cache_rows * 12 : rows * 4);
  }
  std::uint64_t host_bytes() const override { return rows() * dim() * 4ull; }
  double bytes_read_per_row() const override { return 4.0 * dim(); }
  double hit_rate() const override {
    std::lock_guard<std::mutex> g(mu_);
    return accesses_ ? static_cast<double>(hits_) / static_cast<double>(accesses_) : 0.0;
  }
  void reset_stats() const override {
    std::lock_guard<std::mutex> g(mu_);
    hits_ = accesses_ = 0;
  }
  OffloadView view() const { return OffloadView{slot_.as<std::int32_t>(), cache_.as<float>(), host_.as<float>(), dim()}; }
  void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const override {
    std::memcpy(out, host_.as<float>() + first * dim(), count * dim() * 4);
  }
  FormatData format_data() const override {
    FormatData f;
    f.kind = FormatKind::Offload;
    f.rows = rows();
    f.dim = dim();
    f.arrays = {{"host", host_.data(), host_.size()}, {"cache", cache_.data(), cache_.size()}, {"slot", slot_.data(), slot_.size()}};
    f.scalars = {{"cache_rows", static_cast<double>(cache_rows_)}, {"lru", lru_ ? 1.0 : 0.0}, {"managed", managed_ ? 1.0 : 0.0}};
    if (lru_) {  // the cache as the policy holds it now (cold after encoding)
      f.arrays.push_back({"tag", lru_state_->tags().data(), lru_state_->tags().size() * 8});
      f.arrays.push_back({"time", lru_state_->times().data(), lru_state_->times().size() * 4});
      f.scalars["sets"] = static_cast<double>(lru_state_->sets());
      f.scalars["ways"] = lru_state_->ways();
      f.scalars["batches"] = lru_state_->batches();
    }
    return f;
  }

  void build(const float* w, const std::uint64_t* counts) {
    const std::uint64_t R = rows();
    const std::uint32_t D = dim();
    std::memcpy(host_.data(), w, R * D * 4);
    auto* slot = slot_.as<std::int32_t>();
    std::fill(slot, slot + R, -1);
    if (lru_) return;  // starts cold
    std::vector<std::int64_t> order(R);
    std::iota(order.begin(), order.end(), 0);
    if (counts)
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cache_rows_), order.end(),
                        [&](std::int64_t a, std::int64_t b) { return counts[a] != counts[b] ? counts[a] > counts[b] : a < b; });
    for (std::uint64_t s = 0; s < cache_rows_; ++s) {
      slot[order[s]] = static_cast<std::int32_t>(s);
      std::memcpy(cache_.as<float>() + s * D, w + order[s] * D, D * 4);
    }
  }

 protected:
  void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out) const override {
    std::lock_guard<std::mutex> g(mu_);
    if (lru_) update_lru(idx, n);  // the batch's fills first: it reads what the cache holds after them
    cpu::kernels().offload_lookup(view(), make_args(idx, n, offsets, n_bags, psw, mode, out, dim(), bytes_read_per_row()));
    if (!lru_) {
      const auto* slot = slot_.as<std::int32_t>();
      std::uint64_t h = 0;
#pragma omp parallel for num_threads(num_threads()) reduction(+ : h) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) h += slot[idx[i]] >= 0 ? 1 : 0;
      hits_ += h;
      accesses_ += static_cast<std::uint64_t>(n);
    }
  }

 private:
  // The policy's batch step; filled rows are copied into their slots and the slot map follows.
  void update_lru(const std::int64_t* idx, std::int64_t n) const {
    fills_.clear();
    hits_ += lru_state_->batch(idx, n, fills_);
    accesses_ += static_cast<std::uint64_t>(n);
    float* cache = const_cast<float*>(cache_.as<float>());
    auto* slot = const_cast<std::int32_t*>(slot_.as<std::int32_t>());
    const float* host = host_.as<float>();
    const std::uint32_t D = dim();
    for (const auto& f : fills_) {
      if (f.evicted >= 0) slot[f.evicted] = -1;
      slot[f.row] = f.slot;
      std::memcpy(cache + static_cast<std::uint64_t>(f.slot) * D, host + static_cast<std::uint64_t>(f.row) * D, D * 4);
    }
  }

  std::uint64_t cache_rows_;
  bool lru_, managed_;
  HostBuffer host_, cache_, slot_;
  std::unique_ptr<LruCache> lru_state_;
  mutable std::vector<LruCache::Fill> fills_;
  mutable std::uint64_t hits_ = 0, accesses_ = 0;
  mutable std::mutex mu_;
};

}  // namespace

std::unique_ptr<EncodedTable> encode_offload(const StrategySpec& spec, const float* w, std::uint64_t rows,
                                             std::uint32_t dim, const EncodeOptions& o, StrategySize* size) {
  ParamReader pr(spec);
  const double cache = pr.number("cache", 0.1, 0.0, 1.0);
  const std::string policy = pr.choice("policy", "static", {"static", "lru"});
  const std::string memory = pr.choice("memory", "pinned", {"pinned", "managed"});
  pr.done();
  if (rows > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("strategy offload: tables above 2^31-1 rows are not supported");
  const auto cache_rows = std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(cache * static_cast<double>(rows)));
  if (o.check_only) {
    if (size) *size = {OffloadTable::device_bytes_of(rows, dim, cache_rows, policy == "lru"), rows * dim * 4ull, 4.0 * dim};
    return nullptr;
  }
  auto t = std::make_unique<OffloadTable>(rows, dim, cache_rows, policy == "lru", memory == "managed");
  t->build(w, o.counts);
  auto& p = t->params_mut();
  p["cache"] = cache;
  p["cache_rows"] = cache_rows;
  p["policy"] = policy;
  p["memory"] = memory;
  if (policy == "lru") p["ways"] = std::min<std::uint64_t>(kLruWays, cache_rows);
  return t;
}

}  // namespace edo::kernels::detail
