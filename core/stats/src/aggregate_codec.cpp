// Versioned byte encoding of TableAggregate. Layout (all integers LEB128 varints):
//   u8 version (1, or 2 with an ordered sample) | config | rows | u8 mode | lookups | out_of_range
//   exact mode: counts (u8 0 = sparse: n, then n x (row gap, count); u8 1 = dense: rows counts)
//   sketch mode: cms width, depth, cells (u64 array) | top-K: n, n x (row, count)
//                | hll precision, registers (u64 array)
//   histogram: nonzero bins n, n x (bin gap, f64) | f64 cold | max_distance
//   windows: n, n x (window_index, lookups, nrows, nrows x row gap)
//   version 2 only: the ordered sample (OrderedSample::encode())
// u64 array: u8 0 = sparse: nnz, nnz x (index gap, value); u8 1 = dense: size x value.
// Decoding checks every length against the bytes left before allocating.
#include <cstring>
#include <new>

#include "internal.h"

namespace edo::stats::detail {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const uint8_t b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    if (shift == 63 && b > 1) return false;
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void put_double(std::string& out, double v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

bool get_double(std::string_view& in, double& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return v == v;  // reject NaN
}

namespace {

constexpr uint8_t kVersion = 1;
constexpr uint8_t kVersionOrdered = 2;  // kVersion plus the ordered sample at the end
constexpr uint64_t kMaxSketchCells = uint64_t{1} << 24;

size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

template <class V>
void put_array(std::string& out, const V& a) {
  size_t dense = 0, sparse = 0, nnz = 0, prev = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dense += varint_len(a[i]);
    if (a[i]) {
      sparse += varint_len(i - prev) + varint_len(a[i]);
      prev = i;
      ++nnz;
    }
  }
  if (sparse + varint_len(nnz) < dense) {
    out.push_back(0);
    put_varint(out, nnz);
    prev = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i]) {
        put_varint(out, i - prev);
        put_varint(out, a[i]);
        prev = i;
      }
  } else {
    out.push_back(1);
    for (size_t i = 0; i < a.size(); ++i) put_varint(out, a[i]);
  }
}

// `a` is already sized; values must fit in `maxv`.
template <class V>
bool get_array(std::string_view& in, V& a, uint64_t maxv) {
  if (in.empty()) return false;
  const uint8_t kind = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  uint64_t v;
  if (kind == 1) {
    if (in.size() < a.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!get_varint(in, v) || v > maxv) return false;
      a[i] = static_cast<typename V::value_type>(v);
    }
    return true;
  }
  if (kind != 0) return false;
  uint64_t nnz, idx = 0, gap;
  if (!get_varint(in, nnz) || nnz > a.size() || nnz * 2 > in.size()) return false;
  for (uint64_t k = 0; k < nnz; ++k) {
    if (!get_varint(in, gap) || !get_varint(in, v) || v == 0 || v > maxv) return false;
    if (k > 0 && gap == 0) return false;
    if (gap >= a.size() - idx) return false;
    idx += gap;
    if (idx >= a.size()) return false;
    a[idx] = static_cast<typename V::value_type>(v);
  }
  return true;
}

}  // namespace

void ExactCounts::encode(std::string& out) const {
  // Size both forms, write the smaller.
  size_t sparse = 0, dense = rows_, nnz = 0;
  uint64_t prev = 0;
  for_each_nonzero([&](uint64_t r, uint64_t c) {
    sparse += varint_len(r - prev) + varint_len(c);
    dense += varint_len(c) - 1;
    prev = r;
    ++nnz;
  });
  if (sparse + varint_len(nnz) <= dense) {
    out.push_back(0);
    put_varint(out, nnz);
    prev = 0;
    for_each_nonzero([&](uint64_t r, uint64_t c) {
      put_varint(out, r - prev);
      put_varint(out, c);
      prev = r;
    });
  } else {
    out.push_back(1);
    uint64_t next = 0;
    for_each_nonzero([&](uint64_t r, uint64_t c) {
      for (; next < r; ++next) out.push_back(0);
      put_varint(out, c);
      next = r + 1;
    });
    for (; next < rows_; ++next) out.push_back(0);
  }
}

bool ExactCounts::decode(std::string_view& in, uint64_t rows) {
  reset(rows);
  if (in.empty()) return false;
  const uint8_t kind = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  uint64_t v;
  if (kind == 1) {
    if (in.size() < rows) return false;
    make_dense();
    for (uint64_t r = 0; r < rows; ++r) {
      if (!get_varint(in, v)) return false;
      if (v) set_dense(r, v);
    }
    return true;
  }
  if (kind != 0) return false;
  uint64_t nnz, gap, row = 0;
  if (!get_varint(in, nnz) || nnz > rows || nnz * 2 > in.size()) return false;
  sparse_.reserve(nnz);
  for (uint64_t k = 0; k < nnz; ++k) {
    if (!get_varint(in, gap) || !get_varint(in, v) || v == 0) return false;
    if (k > 0 && gap == 0) return false;
    if (gap >= rows - row) return false;
    row += gap;
    if (row >= rows) return false;
    sparse_.emplace_back(row, v);
  }
  if (sparse_.size() * 16 > rows * 4) make_dense();
  return true;
}

}  // namespace edo::stats::detail

namespace edo::stats {

using detail::get_double;
using detail::get_varint;
using detail::put_double;
using detail::put_varint;

std::string TableAggregate::serialize() const {
  std::string out;
  if (!impl_) return out;
  const Impl& a = *impl_;
  out.push_back(static_cast<char>(a.has_sample ? detail::kVersionOrdered : detail::kVersion));
  const StatsConfig& c = a.config;
  put_varint(out, c.exact_rows_limit);
  put_varint(out, c.top_k);
  put_varint(out, c.cms_width);
  put_varint(out, c.cms_depth);
  put_varint(out, c.hll_precision);
  put_varint(out, c.exact_lru_rows_limit);
  put_double(out, c.shards_rate);
  put_varint(out, c.drift_top_k);
  put_varint(out, c.max_windows);
  out.push_back(c.track_lru ? 1 : 0);
  put_varint(out, a.rows);
  out.push_back(static_cast<char>(a.mode));
  put_varint(out, a.lookups);
  put_varint(out, a.out_of_range);
  if (a.append_encoded_counts(out)) {
    // kept as stored (deserialize_lazily())
  } else if (a.mode == CountMode::kExact) {
    a.exact.encode(out);
  } else {
    put_varint(out, a.cms.width());
    put_varint(out, a.cms.depth());
    detail::put_array(out, a.cms.cells());
    auto top = a.topk.sorted();
    put_varint(out, top.size());
    for (const auto& [r, n] : top) {
      put_varint(out, r);
      put_varint(out, n);
    }
    put_varint(out, a.hll.precision());
    detail::put_array(out, a.hll.registers());
  }
  const auto& bins = a.hist.bins();
  size_t nnz = 0;
  for (double b : bins) nnz += b != 0.0;
  put_varint(out, nnz);
  size_t prev = 0;
  for (size_t i = 0; i < bins.size(); ++i)
    if (bins[i] != 0.0) {
      put_varint(out, i - prev);
      put_double(out, bins[i]);
      prev = i;
    }
  put_double(out, a.hist.cold());
  put_varint(out, a.hist.max_distance());
  put_varint(out, a.windows.size());
  for (const auto& w : a.windows) {
    put_varint(out, w.window_index);
    put_varint(out, w.lookups);
    put_varint(out, w.rows.size());
    uint64_t p = 0;
    for (uint64_t r : w.rows) {
      put_varint(out, r - p);
      p = r;
    }
  }
  if (a.has_sample && !a.append_encoded_sample(out)) a.sample.encode(out);
  return out;
}

namespace {

// The counts' section: exact counts, or the count-min sketch, top-K and HyperLogLog. Needs
// a.rows, a.mode and a.config.
bool decode_counts_section(std::string_view& in, TableAggregate::Impl& a) {
  auto get = [&](uint64_t& x) { return get_varint(in, x); };
  const uint64_t rows = a.rows;
  if (a.mode == CountMode::kExact) return a.exact.decode(in, rows);
  uint64_t w, d;
  if (!get(w) || !get(d) || w == 0 || (w & (w - 1)) || d == 0 || d > 16 || w * d > detail::kMaxSketchCells)
    return false;
  a.cms.reset(static_cast<uint32_t>(w), static_cast<uint32_t>(d));
  if (!detail::get_array(in, a.cms.cells(), UINT64_MAX)) return false;
  uint64_t n;
  if (!get(n) || n > a.config.top_k || n * 2 > in.size()) return false;
  std::vector<std::pair<uint64_t, uint64_t>> top(n);
  for (auto& [r, k] : top)
    if (!get(r) || !get(k) || r >= rows) return false;
  a.topk.reset(a.config.top_k);
  a.topk.assign(top);
  uint64_t p;
  if (!get(p) || p < 4 || p > 18) return false;
  a.hll.reset(static_cast<uint32_t>(p));
  return detail::get_array(in, a.hll.registers(), 64 - p + 1);
}

bool decode_sample_section(std::string_view& in, uint64_t rows, OrderedSample& out) {
  if (!OrderedSample::decode(in, out)) return false;
  for (const auto& ref : out.refs)
    if (ref.row >= rows) return false;
  return true;
}

// lazy: the counts and the ordered sample are checked as fully as when decoded, then kept
// in their encoded form (TableAggregate::deserialize_lazily()).
// keep_sample false (lazy only): the ordered sample is checked and dropped.
// The statistics' configuration, as encode wrote it after the version byte; false when a
// value is out of the range any edo writes.
bool decode_config(std::string_view& in, StatsConfig& c) {
  uint64_t v[9];
  auto get = [&](uint64_t& x) { return detail::get_varint_inline(in, x); };
  if (!get(v[0]) || !get(v[1]) || !get(v[2]) || !get(v[3]) || !get(v[4]) || !get(v[5])) return false;
  if (!get_double(in, c.shards_rate) || !(c.shards_rate > 0.0) || c.shards_rate > 1.0) return false;
  if (!get(v[6]) || !get(v[7]) || in.empty()) return false;
  const uint8_t lru = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  if (lru > 1) return false;
  if (v[1] > (1u << 24) || v[2] > (1u << 30) || v[3] > 16 || v[4] > 18 || v[6] > (1u << 24) ||
      v[7] > (1u << 24))
    return false;
  c.exact_rows_limit = v[0];
  c.top_k = static_cast<uint32_t>(v[1]);
  c.cms_width = static_cast<uint32_t>(v[2]);
  c.cms_depth = static_cast<uint32_t>(v[3]);
  c.hll_precision = static_cast<uint32_t>(v[4]);
  c.exact_lru_rows_limit = v[5];
  c.drift_top_k = static_cast<uint32_t>(v[6]);
  c.max_windows = static_cast<uint32_t>(v[7]);
  c.track_lru = lru == 1;
  return true;
}

// The counts section: decoded, or (lazy) checked and kept as bytes, decoded when first read.
bool decode_counts(std::string_view& in, TableAggregate::Impl& a, bool lazy) {
  const char* counts_begin = in.data();
  if (lazy && a.mode == CountMode::kExact) {  // checked without building them
    uint64_t nonzero = 0;
    if (!detail::scan_exact_counts(in, a.rows, [&](uint64_t, uint64_t) { ++nonzero; })) return false;
    a.encoded.unique_rows = nonzero;
  } else {
    if (!decode_counts_section(in, a)) return false;
    if (lazy) {  // free what decoding them built
      a.encoded.unique_rows = a.unique_rows_decoded();
      a.cms = detail::CountMinSketch{};
      a.topk = detail::SpaceSaving{};
      a.hll = detail::HyperLogLog{};
    }
  }
  if (lazy) {  // keep the section's bytes
    a.exact.reset(a.rows);
    a.encoded.counts.assign(counts_begin, static_cast<size_t>(in.data() - counts_begin));
    a.encoded.counts_pending.store(true, std::memory_order_release);
  }
  return true;
}

// The stack-distance histogram: its non-empty bins as (gap, value) pairs, the cold count and
// the largest distance.
bool decode_histogram(std::string_view& in, TableAggregate::Impl& a) {
  auto get = [&](uint64_t& x) { return detail::get_varint_inline(in, x); };
  uint64_t nb, gap, bin = 0;
  if (!get(nb) || nb * 9 > in.size()) return false;
  std::vector<double> bins;
  const uint64_t max_bins = StackDistanceHistogram::bin_of(UINT64_MAX) + 1;
  for (uint64_t k = 0; k < nb; ++k) {
    double x;
    if (!get(gap) || (k > 0 && gap == 0) || gap >= max_bins - bin || !get_double(in, x)) return false;
    bin += gap;
    if (bins.size() <= bin) bins.resize(bin + 1, 0.0);
    bins[bin] = x;
  }
  double cold;
  uint64_t maxd;
  if (!get_double(in, cold) || !get(maxd)) return false;
  bins.shrink_to_fit();  // resize() doubled it on the way: a loaded histogram holds its bins alone
  a.hist.set(std::move(bins), cold, maxd);
  return true;
}

// The footprint windows: each one's index, lookups and distinct rows (ascending, as gaps).
bool decode_windows(std::string_view& in, TableAggregate::Impl& a) {
  auto get = [&](uint64_t& x) { return detail::get_varint_inline(in, x); };  // windows: a varint per row
  uint64_t nw, gap;
  if (!get(nw) || nw > a.config.max_windows || nw * 3 > in.size()) return false;
  a.windows.resize(nw);
  for (auto& win : a.windows) {
    uint64_t nr, r = 0;
    if (!get(win.window_index) || !get(win.lookups) || !get(nr) || nr > in.size()) return false;
    win.rows.resize(nr);
    for (uint64_t k = 0; k < nr; ++k) {
      if (!get(gap) || (k > 0 && gap == 0) || gap >= a.rows - r) return false;
      r += gap;
      win.rows[k] = r;
    }
  }
  return true;
}

// The ordered sample (the last part): decoded, kept as checked bytes (lazy), or dropped unread.
bool decode_sample(std::string_view& in, TableAggregate::Impl& a, bool lazy, bool keep_sample) {
  const char* sample_begin = in.data();
  if (lazy && !keep_sample) {
    // Dropped unread: its header is checked (the sample is the last part, so the bytes left
    // are its references), its references are not read. Walking them was a quarter of a
    // report's time at 10,000 tables (issue 31), for a part the reader never uses.
    if (!OrderedSample::check_header(in)) return false;
    in = {};
    a.has_sample = false;
  } else if (lazy) {  // checked without keeping the references
    if (!OrderedSample::check(in, a.rows)) return false;
    a.encoded.sample.assign(sample_begin, static_cast<size_t>(in.data() - sample_begin));
    a.encoded.sample_pending.store(true, std::memory_order_release);
  } else if (!decode_sample_section(in, a.rows, a.sample)) {
    return false;
  }
  return true;
}

bool decode_impl(std::string_view in, TableAggregate::Impl& a, bool lazy, bool keep_sample = true) {
  if (in.empty()) return false;
  const uint8_t version = static_cast<uint8_t>(in.front());
  if (version != detail::kVersion && version != detail::kVersionOrdered) return false;
  in.remove_prefix(1);
  StatsConfig c;
  if (!decode_config(in, c)) return false;
  uint64_t rows;
  if (!detail::get_varint_inline(in, rows) || in.empty()) return false;
  const uint8_t mode = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  if (mode > 1) return false;
  a.config = c;
  a.rows = rows;
  a.mode = static_cast<CountMode>(mode);
  a.hist.clear();
  a.windows.clear();
  if (!detail::get_varint_inline(in, a.lookups) || !detail::get_varint_inline(in, a.out_of_range)) return false;
  if (!decode_counts(in, a, lazy) || !decode_histogram(in, a) || !decode_windows(in, a)) return false;
  a.has_sample = version == detail::kVersionOrdered;
  a.sample = OrderedSample{};
  if (a.has_sample && !decode_sample(in, a, lazy, keep_sample)) return false;
  return in.empty();
}

}  // namespace

bool TableAggregate::deserialize(std::string_view bytes, TableAggregate& out) {
  try {
    auto impl = std::make_unique<Impl>();
    if (!decode_impl(bytes, *impl, false)) return false;
    out.impl_ = std::move(impl);
    return true;
  } catch (...) {
    return false;
  }
}

bool TableAggregate::deserialize_lazily(std::string_view bytes, TableAggregate& out, bool keep_sample) {
  try {
    auto impl = std::make_unique<Impl>();
    if (!decode_impl(bytes, *impl, true, keep_sample)) return false;
    out.impl_ = std::move(impl);
    return true;
  } catch (...) {
    return false;
  }
}

// ---- lazily decoded parts ---------------------------------------------------------------------
// The bytes were checked by deserialize_lazily(): decoding them again cannot fail short of a
// broken allocator, and a part that did would read as empty (never out of bounds).

void TableAggregate::Impl::decode_counts() const {
  if (!counts_pending()) return;
  std::lock_guard lock(encoded.mu);
  if (!counts_pending()) return;  // another thread decoded them meanwhile
  Impl& self = const_cast<Impl&>(*this);  // Impls are never const objects; see the header
  std::string_view in = encoded.counts;
  if (!decode_counts_section(in, self)) self.exact.reset(rows);
  std::string().swap(self.encoded.counts);
  self.encoded.counts_pending.store(false, std::memory_order_release);
}

void TableAggregate::Impl::decode_sample() const {
  if (!sample_pending()) return;
  std::lock_guard lock(encoded.mu);
  if (!sample_pending()) return;
  Impl& self = const_cast<Impl&>(*this);
  std::string_view in = encoded.sample;
  if (!decode_sample_section(in, rows, self.sample)) self.sample = OrderedSample{};
  std::string().swap(self.encoded.sample);
  self.encoded.sample_pending.store(false, std::memory_order_release);
}

const TableAggregate::Impl& TableAggregate::Impl::counts_in(Impl& scratch) const {
  if (!counts_pending()) return *this;
  std::lock_guard lock(encoded.mu);
  if (!counts_pending()) return *this;
  scratch.rows = rows;
  scratch.config = config;
  scratch.mode = mode;
  scratch.exact.reset(rows);
  std::string_view in = encoded.counts;
  if (!decode_counts_section(in, scratch)) scratch.exact.reset(rows);
  return scratch;
}

bool TableAggregate::Impl::for_each_encoded_count(const std::function<void(uint64_t, uint64_t)>& f) const {
  if (mode != CountMode::kExact || !counts_pending()) return false;
  std::string bytes;  // a copy: f runs without the lock, so it may ask this aggregate anything
  {
    std::lock_guard lock(encoded.mu);
    if (!counts_pending()) return false;
    bytes = encoded.counts;
  }
  std::string_view in = bytes;
  detail::scan_exact_counts(in, rows, f);  // checked when loaded
  return true;
}

bool TableAggregate::Impl::append_encoded_counts(std::string& out) const {
  if (!counts_pending()) return false;
  std::lock_guard lock(encoded.mu);
  if (!counts_pending()) return false;
  out += encoded.counts;
  return true;
}

bool TableAggregate::Impl::append_encoded_sample(std::string& out) const {
  if (!sample_pending()) return false;
  std::lock_guard lock(encoded.mu);
  if (!sample_pending()) return false;
  out += encoded.sample;
  return true;
}

}  // namespace edo::stats
