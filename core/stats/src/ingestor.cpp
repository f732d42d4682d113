// TableIngestor: counts into a dense (or sketch) pending segment, runs the LRU stack, and cuts
// segments at take_delta()/close_window(). A segment's top rows feed the current drift
// window's candidate summary; segments are merged into the staged delta.
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "internal.h"

namespace edo::stats {

struct TableIngestor::Impl {
  uint64_t rows = 0;
  StatsConfig cfg;
  TableAggregate seg;     // since the last segment cut
  TableAggregate staged;  // cut segments since the last take_delta()
  bool has_staged = false;
  bool exact_lru = true;
  // Exact stack of a table above exact_lru_rows_limit: ids from a row map, while the stream's
  // distinct rows stay within exact_lru_distinct_limit (then SHARDS takes over, see switch_to_shards()).
  bool mapped_lru = false;
  // The rows themselves serve as the stack's ids when its per-row array (4 bytes a row) is
  // no larger than the row map would grow to at the distinct limit (state_bound.cpp counts
  // ~100 bytes per distinct row for it): one array read per reference instead of a map probe
  // and a read, and the same distances (ids only name the rows). A large table starts with
  // the row map and moves to direct ids (use_direct_ids()) once it has read more than
  // rows/kDirectIdShare rows: until then the map is the smaller (a 1M-row table that reads 3,000
  // rows holds ~300 KB, not a 4 MB array).
  static constexpr uint64_t kDirectIdShare = 16;
  bool direct_ids = true;
  bool direct_ids_allowed = true;  // the table may move to direct ids (use_direct_ids())
  detail::RowIds row_ids;
  std::vector<uint64_t> ids;  // a chunk's ids from row_ids
  detail::MattsonStack stack;
  detail::DistanceTally tally;  // this segment's exact distances, added to the histogram at the cut
  std::optional<detail::ShardsSampler> shards;
  uint64_t seg_refs = 0;    // references the SHARDS sampler saw in this segment
  uint64_t total_refs = 0;  // in-range references since the start (the sampler's clock)
  // Drift: candidate hot rows of the open window (bounded, see feed_window()).
  std::vector<std::pair<uint64_t, uint64_t>> window_acc;  // (row, count), unsorted
  uint64_t window_lookups = 0;
  uint64_t window_index = 0;
  size_t chunk = 4096;        // references counted at a time (detail::ingest_chunk)
  std::vector<uint64_t> buf;  // in-range rows of a chunk, allocated at first use
  std::vector<uint64_t> est;  // count-min estimates of a chunk (sketch mode)
  // Segments counted elsewhere (add_counted): their SHARDS state, and in sketch mode the rows
  // of the last top-K (candidates again in the next segment, with the device's new ones).
  std::optional<detail::CountedShards> counted;
  std::vector<uint64_t> counted_top;
  // The ordered sample of the stream (ordered_sample.h): cut into each segment's aggregate.
  std::optional<OrderedSampler> order;

  Impl(uint64_t r, const StatsConfig& c) : rows(r), cfg(c), seg(r, c) {
    if (seg.mode() == CountMode::kExact) seg.impl().exact.start_counting();
    exact_lru = r <= c.exact_lru_rows_limit;
    mapped_lru = !exact_lru && c.exact_lru_distinct_limit > 0;
    direct_ids_allowed = exact_lru || (mapped_lru && r / 16 <= c.exact_lru_distinct_limit && r < UINT32_MAX);
    direct_ids = exact_lru;
    if (direct_ids) stack.set_id_bound(r);
    // Only with an LRU curve: a table fitted down to none (fit_state_to under a tight budget) has
    // no exact prefix either, and its bound counts no sampler (4 bytes per row up to 2^20 rows).
    if (c.track_lru && !exact_lru && !mapped_lru) make_sampler();
    if (c.track_lru && c.ordered_sample_refs > 0) order.emplace(c.ordered_sample_refs);
    chunk = detail::ingest_chunk(r, c);
  }

  // The sampler keeps its own counts for its classes and hot rows (exact mode only, as the
  // classes need exact class totals), so that its estimate does not depend on the segment cuts.
  void make_sampler() { shards.emplace(cfg.shards_rate, rows, seg.mode() == CountMode::kExact); }

  // Counting and the LRU stack run chunk by chunk, so that the counts the SHARDS classes
  // read are current to within one chunk; also without the stack, so that the sketch's
  // scratch buffers hold one chunk (stats::state_bound_bytes).
  template <class I>
  void add(const I* idx, size_t n) {
    const size_t kChunk = chunk;
    for (size_t off = 0; off < n; off += kChunk) add_chunk(idx + off, std::min(kChunk, n - off));
  }

  template <class I>
  void add_chunk(const I* idx, size_t n) {
    TableAggregate::Impl& a = seg.impl();
    uint64_t oor = 0;
    if (a.mode == CountMode::kExact) {
      oor = a.exact.add_batch(idx, n);
    } else {
      // In-range rows first (compacted into buf), then the count-min sketch for the whole
      // chunk (prefetched), then the top-K and the distinct-row estimate, in the same order.
      if (est.size() < n) est.resize(n);
      if (buf.size() < n) buf.resize(n);
      size_t m = 0;
      for (size_t i = 0; i < n; ++i) {
        const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(idx[i]));
        buf[m] = r;
        m += r < rows;
      }
      oor = n - m;
      a.cms.add_batch(buf.data(), m, est.data());
      for (size_t i = 0; i < m; ++i) {
        a.topk.offer(buf[i], est[i]);
        a.hll.add(buf[i]);
      }
    }
    a.out_of_range += oor;
    a.lookups += n - oor;
    if (!cfg.track_lru) return;
    // In-range rows, compacted branch-free into buf (int64 input with nothing out of range
    // is used as it is), then the LRU stack.
    if (buf.size() < n) buf.resize(n);
    const uint64_t* in = buf.data();
    size_t m = 0;
    if (std::is_same_v<I, int64_t> && oor == 0) {
      in = reinterpret_cast<const uint64_t*>(idx);
      m = n;
    } else {
      for (size_t i = 0; i < n; ++i) {
        const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(idx[i]));
        buf[m] = r;
        m += r < rows;
      }
    }
    if (order) order->add(in, m);
    if (exact_lru) {
      stack.reference_batch(in, m, tally);
      total_refs += m;
      return;
    }
    size_t i = 0;
    if (mapped_lru) {
      const uint64_t room = detail::exact_lru_max_lookups > total_refs ? detail::exact_lru_max_lookups - total_refs : 0;
      const size_t upto = static_cast<size_t>(std::min<uint64_t>(m, room));
      if (direct_ids) {
        // up to the first row beyond the distinct limit (the stack stops there)
        i = stack.reference_batch(in, upto, tally, cfg.exact_lru_distinct_limit);
      } else {
        if (ids.size() < upto) ids.resize(upto);
        for (; i < upto; ++i) {
          if (row_ids.size() >= cfg.exact_lru_distinct_limit && !row_ids.contains(in[i])) break;
          ids[i] = row_ids.id_of(in[i]);
        }
        stack.reference_batch(ids.data(), i, tally);
        if (direct_ids_allowed && row_ids.size() * kDirectIdShare > rows) use_direct_ids();
      }
      total_refs += i;
      if (i == m) return;
      switch_to_shards();
    }
    shards->process(in + i, m - i);
    seg_refs += m - i;
    total_refs += m - i;
  }

  // The stream read more distinct rows than exact_lru_distinct_limit: the sampler starts
  // from the exact stack's LRU order (so its rows are not cold again) and the exact state is
  // freed. Distances recorded so far stay exact.
  void switch_to_shards() {
    std::vector<uint64_t> order;
    order.reserve(stack.distinct());
    stack.for_each_oldest_first([&](uint64_t id) { order.push_back(direct_ids ? id : row_ids.row_of(id)); });
    make_sampler();
    // Its classes and hot rows count the references it sees (from here on), not those of the
    // exact prefix, whose distances are already recorded; the switch happens at the same
    // reference of the stream whatever the flushes, so the estimate stays a function of it.
    shards->seed(order, total_refs);
    mapped_lru = false;
    stack = detail::MattsonStack{};
    row_ids = detail::RowIds{};
  }

  // The row map's stack is replayed, least recently read first, into a stack whose ids are
  // the rows: the same LRU order, so every later distance is the one the map would have given.
  void use_direct_ids() {
    std::vector<uint64_t> lru_order;
    lru_order.reserve(stack.distinct());
    stack.for_each_oldest_first([&](uint64_t id) { lru_order.push_back(row_ids.row_of(id)); });
    stack = detail::MattsonStack{};
    stack.set_id_bound(rows);
    detail::DistanceTally replay;  // all cold: not part of the stream's distances
    stack.reference_batch(lru_order.data(), lru_order.size(), replay);
    row_ids = detail::RowIds{};
    ids = {};
    direct_ids = true;
  }

  // An upper bound on the distinct rows the table has read (what its counts and exact stack
  // hold a slot for): the hashed counts' size, else the exact stack's, else its rows.
  uint64_t distinct_rows() const {
    const detail::ExactCounts& e = seg.impl().exact;
    if (seg.mode() == CountMode::kExact && e.hashed()) return e.rows_held();
    if (exact_lru || mapped_lru) return std::min<uint64_t>(rows, direct_ids ? stack.distinct() : row_ids.size());
    return rows;
  }

  // Ends the current segment: moves its contents into a new aggregate.
  TableAggregate cut() {
    TableAggregate out(rows, cfg);
    TableAggregate::Impl& o = out.impl();
    TableAggregate::Impl& a = seg.impl();
    o.lookups = a.lookups;
    o.out_of_range = a.out_of_range;
    a.lookups = a.out_of_range = 0;
    if (a.mode == CountMode::kExact) {
      a.exact.extract(o.exact);
    } else {
      std::swap(o.cms, a.cms);
      std::swap(o.topk, a.topk);
      std::swap(o.hll, a.hll);
    }
    tally.add_to(a.hist);  // exact distances first, as they came
    if (shards && seg_refs > 0) shards->flush_segment(a.hist);
    seg_refs = 0;
    std::swap(o.hist, a.hist);
    if (order) {
      o.sample = order->take();
      o.has_sample = true;
    }
    o.windows = std::move(a.windows);
    a.windows.clear();
    return out;
  }

  void feed_window(const TableAggregate& s) {
    window_lookups += s.lookups();
    if (s.lookups() == 0) return;
    const size_t cap = size_t{4} * std::max<uint32_t>(1, cfg.drift_top_k);
    for (const auto& rc : s.top_rows(cap)) window_acc.push_back(rc);
    std::sort(window_acc.begin(), window_acc.end());
    size_t k = 0;
    for (size_t i = 0; i < window_acc.size(); ++i) {
      if (k > 0 && window_acc[k - 1].first == window_acc[i].first)
        window_acc[k - 1].second += window_acc[i].second;
      else
        window_acc[k++] = window_acc[i];
    }
    window_acc.resize(k);
    if (window_acc.size() > 2 * cap) {
      auto desc = [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
      };
      std::nth_element(window_acc.begin(), window_acc.begin() + static_cast<ptrdiff_t>(cap), window_acc.end(), desc);
      window_acc.resize(cap);
    }
  }

  void stage(TableAggregate s) {
    feed_window(s);
    if (!has_staged) {
      staged = std::move(s);
      has_staged = true;
    } else {
      staged.merge(s);
    }
  }

  void add_counted(const CountedSegment& in);

  void flush() { stage(cut()); }
};

void TableIngestor::Impl::add_counted(const CountedSegment& in) {
  if (seg.lookups() > 0 || seg.out_of_range() > 0) flush();  // host-counted references first
  TableAggregate part(rows, cfg);
  TableAggregate::Impl& a = part.impl();
  a.out_of_range = in.out_of_range;
  uint64_t refs = 0;
  std::vector<double> class_refs(detail::CountedShards::kClasses, 0.0);
  std::vector<std::pair<double, double>> hot_rows;  // (segment count, hot references)
  if (a.mode == CountMode::kExact) {
    if (!in.before || !in.after) return;
    auto& sparse = a.exact.sparse();
    for (uint64_t r = 0; r < rows; ++r) {
      const uint32_t b = in.before[r], e = in.after[r];
      const uint32_t d = e - b;  // modulo 2^32
      if (!d) continue;
      sparse.emplace_back(r, d);
      refs += d;
      // References with count b+1 .. b+d: up to kCountedHot by class, the rest hot.
      const uint64_t lo = uint64_t{b} + 1, hi = uint64_t{b} + d;
      for (uint32_t k = 0; k < detail::CountedShards::kClasses && lo <= kCountedHot; ++k) {
        const uint64_t c0 = std::max<uint64_t>(lo, uint64_t{1} << k);
        const uint64_t c1 = std::min<uint64_t>({hi, (uint64_t{2} << k) - 1, kCountedHot});
        if (c1 >= c0) class_refs[k] += static_cast<double>(c1 - c0 + 1);
      }
      if (hi > kCountedHot) hot_rows.emplace_back(d, static_cast<double>(hi - std::max<uint64_t>(lo - 1, kCountedHot)));
    }
    if (sparse.size() * 16 > rows * 4) a.exact.make_dense();
  } else {
    if (!in.cms_before || !in.cms_after) return;
    auto& cells = a.cms.cells();
    for (size_t i = 0; i < cells.size(); ++i) cells[i] = static_cast<uint32_t>(in.cms_after[i] - in.cms_before[i]);
    // Every reference adds one to one cell of each sketch row: the first row's sum is the count.
    for (uint64_t i = 0; i < a.cms.width(); ++i) refs += cells[i];
    if (in.hll) {
      auto& reg = a.hll.registers();
      for (size_t i = 0; i < reg.size(); ++i) reg[i] = static_cast<uint8_t>(std::min<uint32_t>(in.hll[i], 255));
    }
    std::vector<uint64_t> cand = in.candidates;
    cand.insert(cand.end(), counted_top.begin(), counted_top.end());
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    std::vector<std::pair<uint64_t, uint64_t>> items;
    for (uint64_t r : cand)
      if (r < rows)
        if (const uint64_t e = a.cms.estimate(r)) items.emplace_back(r, e);
    a.topk.assign(items);
    counted_top.clear();
    for (const auto& [r, n] : a.topk.sorted()) counted_top.push_back(r);
  }
  a.lookups = refs;
  if (order) {
    // Counted on the device: these references' order is not seen here.
    order->skip(refs);
    a.sample = order->take();
    a.has_sample = true;
  }
  if (cfg.track_lru && refs > 0) {
    if (!counted) counted.emplace(counted_sample_rate(rows, cfg));
    for (const auto& w : in.windows) counted->add_window(w);
    std::vector<SampledRef> sample = in.sample;
    std::vector<std::pair<double, double>> hot;
    hot.reserve(hot_rows.size());
    for (const auto& [k, n] : hot_rows) hot.emplace_back(std::max(0.0, static_cast<double>(refs) / k - 1.0), n);
    detail::CountedShards::HotRow hot_row;
    if (a.mode == CountMode::kExact)
      hot_row = [&](uint64_t r, double& mu) {
        if (r >= rows || in.after[r] <= kCountedHot) return false;
        const uint32_t k = in.after[r] - in.before[r];
        mu = k ? std::max(0.0, static_cast<double>(refs) / k - 1.0) : static_cast<double>(refs);
        return true;
      };
    counted->add_segment(sample, a.mode == CountMode::kExact ? &class_refs : nullptr, hot, &hot_row, refs, a.hist);
  }
  stage(std::move(part));
}

TableIngestor::TableIngestor(uint64_t rows, const StatsConfig& config)
    : impl_(std::make_unique<Impl>(rows, config)) {}
TableIngestor::~TableIngestor() = default;
TableIngestor::TableIngestor(TableIngestor&&) noexcept = default;
TableIngestor& TableIngestor::operator=(TableIngestor&&) noexcept = default;

void TableIngestor::add(const int64_t* indices, size_t n) { impl_->add(indices, n); }
void TableIngestor::add(const int32_t* indices, size_t n) { impl_->add(indices, n); }

void TableIngestor::add_counted(const CountedSegment& segment) { impl_->add_counted(segment); }

void TableIngestor::close_window() {
  Impl& s = *impl_;
  s.flush();
  HotSetWindow w;
  w.window_index = s.window_index++;
  w.lookups = s.window_lookups;
  auto desc = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const size_t k = std::min<size_t>(s.cfg.drift_top_k, s.window_acc.size());
  std::partial_sort(s.window_acc.begin(), s.window_acc.begin() + static_cast<ptrdiff_t>(k), s.window_acc.end(), desc);
  for (size_t i = 0; i < k; ++i) w.rows.push_back(s.window_acc[i].first);
  std::sort(w.rows.begin(), w.rows.end());
  s.window_acc.clear();
  s.window_lookups = 0;
  s.staged.impl().append_windows({w});
}

TableAggregate TableIngestor::take_delta() {
  Impl& s = *impl_;
  s.flush();
  s.has_staged = false;
  return std::move(s.staged);  // staged stays moved-from until the next flush()
}

uint64_t TableIngestor::distinct_rows() const { return impl_->distinct_rows(); }

void TableIngestor::shed_lru(uint32_t drift_top_k) {
  Impl& s = *impl_;
  s.cfg.track_lru = false;
  s.cfg.drift_top_k = std::min(s.cfg.drift_top_k, drift_top_k);
  s.exact_lru = s.mapped_lru = false;
  s.stack = detail::MattsonStack{};
  s.row_ids = detail::RowIds{};
  s.ids = {};
  s.buf = {};
  s.shards.reset();
  s.order.reset();
  // The open window's candidates down to what the smaller hot set keeps (the most read).
  const size_t cap = size_t{4} * std::max<uint32_t>(1, s.cfg.drift_top_k);
  if (s.window_acc.size() > cap) {
    auto desc = [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; };
    std::nth_element(s.window_acc.begin(), s.window_acc.begin() + static_cast<ptrdiff_t>(cap), s.window_acc.end(), desc);
    s.window_acc.resize(cap);
  }
  s.window_acc.shrink_to_fit();
}

uint64_t TableIngestor::ordered_sample_kept() const { return impl_->order ? impl_->order->kept() : 0; }

void TableIngestor::raise_ordered_sample_limit(uint64_t refs) {
  if (impl_->order) impl_->order->raise_max_refs(refs);
}

const TableAggregate& TableIngestor::pending() const {
  impl_->flush();
  return impl_->staged;
}

}  // namespace edo::stats
