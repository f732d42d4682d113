#include "session.h"

#include "edo/edo.h"

namespace edo::capture {

// ---- TableCounts ------------------------------------------------------------------------------
namespace {
// What a table is held to when it is placed, before its first batch: rows read by the
// batch's indices (a waiting table: by one batch of kFirstIndices).
constexpr uint64_t kFirstIndices = 4096;
stats::StateNeed first_need(uint64_t rows, uint64_t n) {
  if (n == UINT64_MAX) return stats::StateNeed{};
  return stats::StateNeed{std::min(rows, n), n};
}
}  // namespace

uint64_t TableCounts::smallest_bytes(uint64_t rows) const {
  const stats::StateNeed need = first_need(rows, kFirstIndices);
  return stats::state_bound_bytes(rows, need, stats::fit_state_to(rows, need, cfg_, 0));
}

// Both at what one batch can read: beyond it a table's reservation follows what it reads
// (raise_need), so a waiting million-row table does not shrink the others' shares by the
// 228 MB it would hold only if it read every row.
uint64_t TableCounts::full_bytes(uint64_t rows) const {
  return stats::state_bound_bytes(rows, first_need(rows, kFirstIndices), cfg_);
}

void TableCounts::note_registered(const Registry* registry) {
  if (!registry) return;
  const uint32_t n = registry->size();
  for (; noted_ < n; ++noted_) {
    const TableInfo* t = registry->get(noted_);
    if (!t) break;  // published after the count: the next call notes it
    if (noted_ < tables_.size() && (tables_[noted_].ing || tables_[noted_].refused)) continue;
    waiting_min_ += smallest_bytes(t->rows);
    waiting_full_ += full_bytes(t->rows);
  }
}

void TableCounts::mark_downsized(Entry& e) {
  if (e.downsized) return;
  e.downsized = true;
  ++news_.downsized_tables;
}

// The table's entry, its statistics placed on first use within the budget. `fit`: size the
// statistics to the table's share (host-counted tables); a table counted on the device keeps
// the configured sizes, which its device state was laid out with, or is refused.
TableCounts::Entry& TableCounts::entry(const TableInfo& t, const Registry* registry, bool fit, uint64_t first) {
  if (tables_.size() <= t.id) tables_.resize(size_t(t.id) + 1);
  if (tables_[t.id].ing || tables_[t.id].refused) return tables_[t.id];
  note_registered(registry);
  Entry& e = tables_[t.id];
  const uint64_t own_min = smallest_bytes(t.rows), own_full = full_bytes(t.rows);
  if (t.id < noted_) {  // no longer waiting: its reserve is its own from here on
    waiting_min_ -= own_min;
    waiting_full_ -= own_full;
  }
  // A table the budget has no room for at its full statistics (as of one batch) takes it
  // from the LRU curves of tables placed before, largest first, rather than being sized down
  // or refused: a table without statistics loses every lookup, one without an LRU curve keeps
  // its counts exact (and the distances it recorded).
  while (fit && this->left() - std::min(this->left(), waiting_min_) < own_full && shed_one_lru()) {
  }
  const uint64_t left = this->left();
  e.need = first_need(t.rows, first);
  // Its full statistics as of the batch in hand (a waiting table is reserved as of
  // kFirstIndices; a first batch of 65,536 indices can read more rows): when they fit beside
  // every waiting table's, the share is them; a share sized to 4,096 rows read would cut the
  // exact LRU prefix of a table that read more down to those, with the budget free.
  const uint64_t need_full = fit ? stats::state_bound_bytes(t.rows, e.need, cfg_) : own_full;
  // What the other waiting tables keep, and this table's share of the rest: in proportion to
  // its full statistics among theirs (all of it when they all fit), at least its smallest.
  const uint64_t free = left - std::min(left, waiting_min_);
  const uint64_t wanted = own_full + waiting_full_;
  const uint64_t proportional =
      need_full + waiting_full_ <= left ? std::max(own_full, need_full)
      : wanted <= left                  ? own_full
                                        : uint64_t(static_cast<long double>(left) * own_full / static_cast<long double>(wanted));
  const uint64_t share = std::min(free, std::max(own_min, proportional));
  stats::StatsConfig c = fit ? stats::fit_state_to(t.rows, e.need, cfg_, share) : cfg_;
  // The ordered sample and the closed drift windows start small; the share's config is their
  // cap (raise_order_limit, close_window).
  e.rows = t.rows;
  e.order_cap = c.track_lru ? c.ordered_sample_refs : 0;
  e.windows_cap = c.max_windows;
  c.ordered_sample_refs = std::min(c.ordered_sample_refs, kFirstOrderedRefs);
  e.held = c;
  e.held.max_windows = std::min(c.max_windows, kFirstWindows);
  uint64_t held = 0, scratch = 0;
  uint64_t need = extra_for(e, e.held, e.need, held, scratch);
  if (need > left) {
    e.refused = true;
    ++news_.refused_tables;
    return e;
  }
  used_ += held;
  scratch_ = std::max(scratch_, scratch);
  e.reserved = held;
  e.ing = std::make_unique<stats::TableIngestor>(t.rows, c);
  if (c.exact_rows_limit != cfg_.exact_rows_limit || c.cms_width != cfg_.cms_width || c.top_k != cfg_.top_k ||
      c.hll_precision != cfg_.hll_precision || c.max_windows != cfg_.max_windows || c.drift_top_k != cfg_.drift_top_k ||
      c.shards_rate != cfg_.shards_rate || c.track_lru != cfg_.track_lru ||
      c.exact_lru_distinct_limit != cfg_.exact_lru_distinct_limit ||
      (cfg_.track_lru && e.order_cap != cfg_.ordered_sample_refs))
    mark_downsized(e);
  return e;
}

bool TableCounts::try_hold(Entry& e, const stats::StatsConfig& to) { return try_hold(e, to, e.need); }

uint64_t TableCounts::extra_for(const Entry& e, const stats::StatsConfig& to, const stats::StateNeed& want,
                                uint64_t& held, uint64_t& scratch) const {
  scratch = stats::state_scratch_bytes(e.rows, want, to);
  held = stats::state_bound_bytes(e.rows, want, to) - scratch;
  return (held > e.reserved ? held - e.reserved : 0) + (scratch > scratch_ ? scratch - scratch_ : 0);
}

bool TableCounts::try_hold(Entry& e, const stats::StatsConfig& to, const stats::StateNeed& want) {
  uint64_t held = 0, scratch = 0;
  const uint64_t extra = extra_for(e, to, want, held, scratch);
  if (extra > 0) {
    const uint64_t left = this->left();
    if (extra > left - std::min(left, waiting_min_)) return false;
  }
  used_ = used_ - e.reserved + held;
  scratch_ = std::max(scratch_, scratch);
  e.reserved = held;
  e.held = to;
  e.need = want;
  return true;
}

void TableCounts::shed_lru(Entry& e) {
  stats::StatsConfig bare = e.held;
  bare.track_lru = false;
  bare.drift_top_k = std::min<uint32_t>(bare.drift_top_k, kShedDriftTopK);
  try_hold(e, bare, e.need);  // smaller than what it holds: always succeeds
  e.ing->shed_lru(bare.drift_top_k);
  e.order_cap = 0;
  mark_downsized(e);
}

bool TableCounts::shed_one_lru() {
  Entry* oldest = nullptr;
  for (Entry& o : tables_)
    if (o.ing && o.held.track_lru && (!oldest || o.last_read < oldest->last_read)) oldest = &o;
  if (!oldest) return false;
  shed_lru(*oldest);
  return true;
}

bool TableCounts::raise_need(Entry& e, uint64_t n) {
  if (e.need.distinct == UINT64_MAX) return true;  // held to its worst case already
  stats::StateNeed want;
  want.distinct = std::min(e.rows, e.ing->distinct_rows() + n);
  want.refs = e.refs + n;
  if (!e.need.idle && want.distinct <= e.need.distinct && want.refs <= e.need.refs) return true;
  want.distinct = std::max(want.distinct, e.need.distinct);
  want.refs = std::max(want.refs, e.need.refs);
  return try_hold(e, e.held, want);
}

void TableCounts::settle_need(Entry& e) {
  if (e.need.distinct == UINT64_MAX) return;
  // Only what was read stays reserved: the next batch raises it again (one table at a time
  // holds the room a batch could add).
  stats::StateNeed read{std::min(e.rows, e.ing->distinct_rows()), e.refs};
  try_hold(e, e.held, read);  // never more than it holds: always succeeds
}

void TableCounts::raise_order_limit(Entry& e, uint64_t n) {
  const uint64_t limit = e.held.ordered_sample_refs;
  if (limit == 0 || limit >= e.order_cap || !e.held.track_lru) return;
  const uint64_t want = e.ing->ordered_sample_kept() + n;
  if (want <= limit) return;
  uint64_t to = limit;
  while (to < want && to < e.order_cap) to *= 2;
  stats::StatsConfig c = e.held;
  for (to = std::min(to, e.order_cap); to > limit; to = std::max(limit, to / 2)) {
    c.ordered_sample_refs = to;
    if (try_hold(e, c)) break;
  }
  if (to < std::min(want, e.order_cap)) mark_downsized(e);  // its sample is thinned sooner than configured
  if (to > limit) e.ing->raise_ordered_sample_limit(to);
}

void TableCounts::close_window(Entry& e) {
  if (e.windows_closed >= e.held.max_windows) {
    stats::StatsConfig c = e.held;
    c.max_windows = std::min(e.windows_cap, std::max<uint32_t>(1, e.held.max_windows) * 2);
    if (c.max_windows <= e.held.max_windows || !try_hold(e, c)) {
      // No room for another closed window before the next delta: this one runs on. Past the
      // cap the oldest windows would be dropped anyway; within it that is a smaller statistic.
      if (e.held.max_windows < e.windows_cap) mark_downsized(e);
      else e.ing->close_window();  // the aggregate keeps the newest max_windows: no more memory
      return;
    }
  }
  ++e.windows_closed;
  e.ing->close_window();
}

void TableCounts::add_counted_locked(const TableInfo& t, const stats::CountedSegment& segment, const Registry* registry) {
  Entry& e = entry(t, registry, /*fit=*/false, UINT64_MAX);
  if (e.refused) return;  // counted in refused_tables; a segment carries no lookup total
  e.ing->add_counted(segment);
  e.pending = true;
}

bool TableCounts::admit_counted_locked(const TableInfo& t, uint64_t n, const Registry* registry) {
  if (!entry(t, registry, /*fit=*/false, UINT64_MAX).refused) return true;
  news_.refused_lookups += n;
  return false;
}

void TableCounts::add_locked(const TableInfo& t, const void* p, uint64_t n, int type, const Registry* registry) {
  Entry& e = entry(t, registry, /*fit=*/true, n);
  bool room = !e.refused && raise_need(e, n);
  while (!e.refused && !room && shed_one_lru()) room = raise_need(e, n);
  if (!room) {
    // No room for what the batch can add: refused, counted (a table placed earlier may
    // still read rows it has read before, in later batches, if those fit).
    if (!e.refused) mark_downsized(e);
    news_.refused_lookups += n;
    return;
  }
  raise_order_limit(e, n);
  if (type == EDO_I64) e.ing->add(static_cast<const int64_t*>(p), size_t(n));
  else e.ing->add(static_cast<const int32_t*>(p), size_t(n));
  e.refs += n;
  e.last_read = ++reads_;
  settle_need(e);
  e.pending = true;
}

TableCounts::BudgetNews TableCounts::take_budget_news_locked() {
  BudgetNews n = news_;
  news_ = BudgetNews{};
  return n;
}

void TableCounts::close_windows_locked() {
  for (Entry& e : tables_)
    if (e.ing && e.pending) close_window(e);
}

uint64_t TableCounts::take_deltas_locked(bool close_window, uint32_t registered, std::vector<wire::TableDelta>& out) {
  uint64_t lookups = 0;
  for (uint32_t id = 0; id < tables_.size() && id < registered; ++id) {
    Entry& e = tables_[id];
    if (e.ing && !e.pending && e.delta_out) {
      // Its delta went out with the previous flush, which encoded and wrote it before this one
      // could start (flush_mu): until it counts again (raise_need) the table holds no serialized
      // delta. A device-counted table stays held to its worst case.
      e.delta_out = false;
      if (e.need.distinct != UINT64_MAX) {
        stats::StateNeed idle = e.need;
        idle.idle = true;
        try_hold(e, e.held, idle);  // smaller than what it holds: always succeeds
      }
    }
    if (!e.ing || !e.pending) continue;
    if (close_window) this->close_window(e);
    stats::TableAggregate d = e.ing->take_delta();
    e.windows_closed = 0;
    e.pending = false;
    lookups += d.lookups();
    if (!d.empty()) out.push_back({id, d.serialize()});
    e.delta_out = true;
  }
  return lookups;
}

stats::TableAggregate TableCounts::pending_locked(uint32_t id) const {
  if (id >= tables_.size() || !tables_[id].ing || !tables_[id].pending) return {};
  return tables_[id].ing->pending();
}

// ---- EventLog -----------------------------------------------------------------------------------
bool EventLog::add_memory_event(const wire::MemEvent& e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (events_.size() >= max_events_) {
    drops_["memory_events"] += 1;
    drops_dirty_ = true;
    return false;
  }
  events_.push_back(e);
  return true;
}

void EventLog::add_note(wire::Note n) {
  std::lock_guard<std::mutex> lk(mu_);
  notes_.push_back(std::move(n));
}

void EventLog::count_family_drop(drops::Family family, std::string_view item, uint64_t n) {
  // Reused per thread, and leaked: no allocation for a member seen before, and no thread-exit
  // destructor run inside the job's threads.
  thread_local std::string* key = new std::string();
  key->assign(family.prefix()).append(item);
  add_drop(*key, n);
}

void EventLog::add_drop(std::string_view counter, uint64_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = drops_.find(counter);
  if (it == drops_.end()) it = drops_.emplace(std::string(counter), 0).first;
  it->second += n;
  drops_dirty_ = true;
}

bool EventLog::any() const {
  std::lock_guard<std::mutex> lk(mu_);
  return !events_.empty() || !notes_.empty() || drops_dirty_;
}

void EventLog::take(std::vector<wire::MemEvent>& events, std::vector<wire::Note>& notes,
                    std::vector<std::pair<std::string, uint64_t>>& dropped) {
  std::lock_guard<std::mutex> lk(mu_);
  events.swap(events_);
  notes.swap(notes_);
  if (drops_dirty_) {
    for (const auto& [k, v] : drops_) dropped.emplace_back(k, v);
    drops_dirty_ = false;
  }
}

void EventLog::take_drops(std::vector<std::pair<std::string, uint64_t>>& dropped) {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [k, v] : drops_) dropped.emplace_back(k, v);
  drops_dirty_ = !drops_.empty();
}

// ---- KernelBook ---------------------------------------------------------------------------------
void KernelBook::launch(const std::string& name, const std::vector<std::string>& tables) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& k = kernels_[name];
  k.launches++;
  for (const auto& t : tables) k.tables[t].launches++;
  dirty_ = true;
}

void KernelBook::launch(const std::string& name, const std::string* const* tables, size_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& k = kernels_[name];  // std::map::operator[] copies the key only to insert it
  k.launches++;
  for (size_t i = 0; i < n; ++i) k.tables[*tables[i]].launches++;
  dirty_ = true;
}

void KernelBook::time(const std::string& name, uint64_t ns, const std::vector<std::string>& tables) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& k = kernels_[name];
  k.total_ns += ns;
  for (const auto& t : tables) k.tables[t].total_ns += ns;
  dirty_ = true;
}

void KernelBook::mark_dirty() {
  std::lock_guard<std::mutex> lk(mu_);
  dirty_ = true;
}

bool KernelBook::dirty() const {
  std::lock_guard<std::mutex> lk(mu_);
  return dirty_;
}

std::optional<std::vector<wire::Kernel>> KernelBook::take_if_dirty() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!dirty_) return std::nullopt;
  std::vector<wire::Kernel> out;
  for (const auto& [name, k] : kernels_) {
    wire::Kernel w{name, k.launches, k.total_ns, {}, {}};
    for (const auto& [table, t] : k.tables) {
      w.tables.push_back(table);
      w.per_table.push_back({table, t.launches, t.total_ns});
    }
    out.push_back(std::move(w));
  }
  dirty_ = false;
  return out;
}

// ---- RangeBook ----------------------------------------------------------------------------------
RangeBook::~RangeBook() {
  for (auto& [name, r] : ranges_) delete r;
}

RangeTotals* RangeBook::named(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = ranges_.find(name);
  if (it != ranges_.end()) return it->second;
  auto* r = new RangeTotals();
  r->name = name;
  ranges_.emplace(name, r);
  return r;
}

std::optional<std::vector<wire::Range>> RangeBook::take_if_dirty() {
  if (!dirty_.exchange(false)) return std::nullopt;
  std::vector<wire::Range> out;
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [name, r] : ranges_)
    if (r->count || r->lookups || r->alloc_bytes)
      out.push_back({name, r->count.load(), r->total_ns.load(), r->lookups.load(), r->alloc_bytes.load()});
  return out;
}

// ---- Session ------------------------------------------------------------------------------------
namespace {
std::atomic<uint64_t> next_serial{1};
}

Session::Session(const SessionIdentity& ident, const SinkTarget& sink_target, const stats::StatsConfig& stats,
                 uint64_t max_queue_bytes, uint64_t max_events, bool quiet_child, uint64_t max_state_bytes)
    : id(ident),
      serial(next_serial.fetch_add(1)),
      counts(stats, max_state_bytes),
      queue(max_queue_bytes),
      events(max_events),
      sink(sink_target, ident.pid),
      quiet(quiet_child) {}

void Session::drain(const Registry& registry, const std::function<bool()>& give_up, bool drop_rest) {
  std::lock_guard<std::mutex> dlk(drain_mu);
  std::vector<Batch*> work = queue.take();
  if (work.empty()) return;
  size_t done = 0;
  {
    std::lock_guard<std::mutex> lk(counts.mutex());
    for (; done < work.size(); ++done) {
      if (give_up && give_up()) break;
      Batch* b = work[done];
      if (b->table < 0) counts.close_windows_locked();
      else if (const TableInfo* t = registry.get(b->table))
        counts.add_locked(*t, b->data.get(), b->count, b->type, &registry);
    }
  }
  std::vector<Batch*> rest(work.begin() + long(done), work.end());
  work.resize(done);
  if (!rest.empty() && drop_rest) {
    uint64_t batches = 0, indices = 0;
    for (Batch* b : rest)
      if (b->table >= 0) ++batches, indices += b->count;
    if (batches) {
      events.count_drop("batches", batches);
      events.count_drop("indices", indices);
    }
    work.insert(work.end(), rest.begin(), rest.end());
    rest.clear();
  }
  queue.recycle(work);
  queue.put_back(rest);
}

bool Session::anything_to_say(uint32_t registered_tables) const {
  if ((registered_tables > 0 && !quiet.load()) || steps.load() > 0 || ranges.dirty()) return true;
  return events.any() || kernels.dirty();
}

}  // namespace edo::capture
