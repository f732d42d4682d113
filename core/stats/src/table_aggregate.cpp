// TableAggregate: construction, accessors, merge.
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace edo::stats {

void TableAggregate::Impl::init(uint64_t r, const StatsConfig& c) {
  rows = r;
  config = c;
  mode = r <= c.exact_rows_limit ? CountMode::kExact : CountMode::kSketch;
  lookups = out_of_range = 0;
  exact.reset(mode == CountMode::kExact ? r : 0);
  if (mode == CountMode::kSketch) {
    cms.reset(c.cms_width, c.cms_depth);
    topk.reset(c.top_k);
    hll.reset(c.hll_precision);
  }
  hist.clear();
  windows.clear();
  has_sample = false;
  sample = OrderedSample{};
  encoded = detail::EncodedParts{};
}

uint64_t TableAggregate::Impl::unique_rows_decoded() const {
  if (mode == CountMode::kExact) return exact.nonzero();
  const double e = std::llround(hll.estimate());
  return std::min<uint64_t>(rows, static_cast<uint64_t>(std::max(0.0, e)));
}

void TableAggregate::Impl::append_windows(const std::vector<HotSetWindow>& w) {
  if (w.empty()) return;
  windows.insert(windows.end(), w.begin(), w.end());
  std::stable_sort(windows.begin(), windows.end(),
                   [](const HotSetWindow& a, const HotSetWindow& b) { return a.window_index < b.window_index; });
  const size_t cap = std::max<uint32_t>(1, config.max_windows);
  if (windows.size() > cap) windows.erase(windows.begin(), windows.end() - static_cast<ptrdiff_t>(cap));
}

TableAggregate::TableAggregate() : TableAggregate(0, StatsConfig{}) {}
TableAggregate::TableAggregate(uint64_t rows, const StatsConfig& config) : impl_(std::make_shared<Impl>()) {
  impl_->init(rows, config);
}
TableAggregate::~TableAggregate() = default;
TableAggregate::TableAggregate(const TableAggregate& o) : impl_(o.impl_) {}
TableAggregate& TableAggregate::operator=(const TableAggregate& o) {
  impl_ = o.impl_;
  return *this;
}
TableAggregate::TableAggregate(TableAggregate&& o) noexcept : impl_(std::move(o.impl_)) {}
TableAggregate& TableAggregate::operator=(TableAggregate&& o) noexcept {
  impl_ = std::move(o.impl_);
  return *this;
}

TableAggregate::Impl& TableAggregate::own() {
  if (impl_) {
    impl_->decode_all();  // a writer needs every part decoded (and a copy copies decoded parts)
    if (impl_.use_count() > 1) impl_ = std::make_shared<Impl>(*impl_);
  }
  return *impl_;
}
TableAggregate::Impl& TableAggregate::impl() { return own(); }
const TableAggregate::Impl& TableAggregate::impl() const {
  impl_->decode_all();
  return *impl_;
}

uint64_t TableAggregate::rows() const { return impl_ ? impl_->rows : 0; }
CountMode TableAggregate::mode() const { return impl_ ? impl_->mode : CountMode::kExact; }
uint64_t TableAggregate::lookups() const { return impl_ ? impl_->lookups : 0; }
uint64_t TableAggregate::out_of_range() const { return impl_ ? impl_->out_of_range : 0; }

uint64_t TableAggregate::count(uint64_t row) const {
  if (!impl_) return 0;
  impl_->decode_counts();  // one row at a time: callers ask for many, keep them decoded
  return impl_->mode == CountMode::kExact ? impl_->exact.get(row) : impl_->cms.estimate(row);
}

uint64_t TableAggregate::unique_rows() const {
  if (!impl_) return 0;
  if (impl_->counts_pending()) return impl_->encoded.unique_rows;  // set before the flag, never changed
  return impl_->unique_rows_decoded();
}

namespace {

// Sorts counts descending. Most counts of a skewed table are small (a Zipf table's tail is
// ones and twos): those below kTallied are tallied and written back, only the rest sorted.
// This sort was most of a report's time at 10,000 tables (issue 31).
void sort_descending(std::vector<uint64_t>& v) {
  constexpr uint64_t kTallied = 256;
  uint64_t tally[kTallied] = {};
  size_t large = 0;
  for (uint64_t c : v) {
    if (c < kTallied) ++tally[c];
    else v[large++] = c;
  }
  std::sort(v.begin(), v.begin() + static_cast<ptrdiff_t>(large), std::greater<>());
  size_t at = large;
  for (uint64_t c = kTallied; c-- > 0;)
    for (uint64_t k = tally[c]; k > 0; --k) v[at++] = c;
}

}  // namespace

std::vector<uint64_t> TableAggregate::counts_descending() const {
  std::vector<uint64_t> v;
  if (!impl_) return v;
  if (impl_->counts_pending() && impl_->mode == CountMode::kExact) v.reserve(impl_->encoded.unique_rows);
  if (impl_->for_each_encoded_count([&](uint64_t, uint64_t c) { v.push_back(c); })) {
    sort_descending(v);
    return v;
  }
  Impl scratch;  // sketch counts still encoded are decoded here for this call only
  const Impl& a = impl_->counts_in(scratch);
  if (a.mode == CountMode::kExact) {
    v.reserve(a.exact.dense() ? 1024 : a.exact.sparse_.size());
    a.exact.for_each_nonzero([&](uint64_t, uint64_t c) { v.push_back(c); });
  } else {
    for (const auto& [r, c] : a.topk.sorted()) v.push_back(c);
  }
  sort_descending(v);
  return v;
}

std::vector<std::pair<uint64_t, uint64_t>> TableAggregate::top_rows(size_t k) const {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  if (!impl_ || k == 0) return v;
  auto desc = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  Impl scratch;
  const bool encoded = impl_->for_each_encoded_count([&](uint64_t r, uint64_t c) { v.emplace_back(r, c); });
  const Impl& a = encoded ? *impl_ : impl_->counts_in(scratch);
  if (a.mode == CountMode::kExact) {
    if (!encoded) a.exact.for_each_nonzero([&](uint64_t r, uint64_t c) { v.emplace_back(r, c); });
    if (v.size() > k) {
      std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end(), desc);
      v.resize(k);
    }
    std::sort(v.begin(), v.end(), desc);
  } else {
    v = a.topk.sorted();
    if (v.size() > k) v.resize(k);
  }
  return v;
}

void TableAggregate::for_each_nonzero(const std::function<void(uint64_t, uint64_t)>& f) const {
  if (!impl_) return;
  if (impl_->for_each_encoded_count(f)) return;
  Impl scratch;
  const Impl& a = impl_->counts_in(scratch);
  if (a.mode == CountMode::kExact) {
    a.exact.for_each_nonzero(f);
  } else {
    auto v = a.topk.sorted();
    std::sort(v.begin(), v.end());
    for (const auto& [r, c] : v) f(r, c);
  }
}

const StackDistanceHistogram& TableAggregate::stack_distances() const {
  static const StackDistanceHistogram kEmpty;
  return impl_ ? impl_->hist : kEmpty;
}
bool TableAggregate::release_ordered_sample() {
  if (!impl_ || impl_.use_count() > 1 || !impl_->has_sample) return false;
  std::lock_guard lock(impl_->encoded.mu);
  impl_->has_sample = false;
  impl_->sample = OrderedSample{};
  std::string().swap(impl_->encoded.sample);
  impl_->encoded.sample_pending.store(false, std::memory_order_release);
  return true;
}
const OrderedSample* TableAggregate::ordered_sample() const {
  if (!impl_ || !impl_->has_sample) return nullptr;
  impl_->decode_sample();  // callers keep the pointer: the sample stays decoded
  return &impl_->sample;
}

size_t TableAggregate::memory_bytes() const {
  if (!impl_) return 0;
  const Impl& a = *impl_;
  std::lock_guard lock(a.encoded.mu);  // the parts' form is stable while it is counted
  size_t n = sizeof(Impl) + a.encoded.counts.capacity() + a.encoded.sample.capacity();
  n += a.exact.lo_.capacity() * sizeof(uint32_t) + a.exact.dirty_.capacity() +
       a.exact.sparse_.capacity() * sizeof(a.exact.sparse_[0]) + a.exact.carry_.size() * 32;
  n += a.cms.cells().capacity() * sizeof(uint64_t) + a.topk.heap_bytes() + a.hll.registers().capacity();
  n += a.hist.bins().capacity() * sizeof(double);
  n += a.windows.capacity() * sizeof(HotSetWindow);
  for (const auto& w : a.windows) n += w.rows.capacity() * sizeof(uint64_t);
  n += a.sample.refs.capacity() * sizeof(OrderedRef);
  return n;
}

const std::vector<HotSetWindow>& TableAggregate::windows() const {
  static const std::vector<HotSetWindow> kEmpty;
  return impl_ ? impl_->windows : kEmpty;
}

namespace {

// The ordered samples of two aggregates, before their counts are added: `b` follows `a` in
// one stream (an ingestor's deltas), or the result is no stream's order.
void merge_samples(TableAggregate::Impl& a, const TableAggregate::Impl& b) {
  const bool a_empty = a.lookups == 0 && a.out_of_range == 0 && !a.has_sample;
  if (b.has_sample) {
    if (a.has_sample) {
      a.sample.append(b.sample);
    } else {
      a.sample = b.sample;
      a.has_sample = true;
      if (!a_empty) {  // what `a` counted was not sampled
        a.sample.valid = false;
        a.sample.refs.clear();
      }
    }
  } else if (a.has_sample && (b.lookups > 0 || b.out_of_range > 0)) {
    a.sample.valid = false;  // `b` counted references the sample never saw
    a.sample.refs.clear();
  }
}

}  // namespace

bool TableAggregate::merge(const TableAggregate& other) {
  if (!impl_ || !other.impl_) return false;
  Impl& a = own();
  other.impl_->decode_all();
  const Impl& b = *other.impl_;
  if (a.rows != b.rows || a.mode != b.mode) return false;
  if (a.mode == CountMode::kSketch &&
      (a.cms.width() != b.cms.width() || a.cms.depth() != b.cms.depth() ||
       a.hll.precision() != b.hll.precision()))
    return false;
  merge_samples(a, b);
  if (a.mode == CountMode::kExact) {
    a.exact.merge(b.exact);
  } else {
    a.cms.merge(b.cms);
    a.topk.merge(b.topk);
    a.hll.merge(b.hll);
  }
  // The stack-distance histogram covers every reference or none: a side that counted
  // references without tracking LRU (a table that gave up its curve under EDO_MAX_MEMORY_MB,
  // session.cpp shed_lru) leaves a curve of only part of the stream, which would read as the
  // whole (a cold prefix: hit rates near 0). The merged aggregate then has no curve, as a table
  // that never tracked one; the report and the tuner say so and fall back to the counts.
  const bool a_partial = !a.config.track_lru && (a.lookups > 0 || a.out_of_range > 0);
  const bool b_partial = !b.config.track_lru && (b.lookups > 0 || b.out_of_range > 0);
  a.lookups += b.lookups;
  a.out_of_range += b.out_of_range;
  if (a_partial || b_partial) {
    a.hist.clear();
    a.config.track_lru = false;
  } else {
    a.hist.merge(b.hist);
  }
  a.append_windows(b.windows);
  return true;
}

bool TableAggregate::empty() const {
  if (!impl_) return true;
  return impl_->lookups == 0 && impl_->out_of_range == 0 && impl_->hist.empty() && impl_->windows.empty();
}

void TableAggregate::clear() {
  if (!impl_) return;
  Impl& a = own();
  a.lookups = a.out_of_range = 0;
  a.exact.clear();
  if (a.mode == CountMode::kSketch) {
    a.cms.clear();
    a.topk.clear();
    a.hll.clear();
  }
  a.hist.clear();
  a.windows.clear();
  a.has_sample = false;
  a.sample = OrderedSample{};
}

}  // namespace edo::stats
