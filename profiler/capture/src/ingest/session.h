// One tracing session: everything that belongs to one process's report (its identity, the
// counts not yet flushed, memory events, kernel and range totals, its sink, its background
// thread). A forked child gets a new Session object (lifecycle.cpp): nothing of the parent's
// session can leak into the child's report, whatever fields are added here later.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "edo/drops/catalog.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"
#include "ingest_queue.h"
#include "registry.h"
#include "sink.h"
#include "weight_state.h"

namespace edo::capture {

struct SessionIdentity {
  int64_t pid = 0;
  int64_t ppid = 0;
  int64_t start_unix_ns = 0;
  int64_t start_mono_ns = 0;
};

// Per-table counting state of a session, within a memory budget (EDO_MAX_MEMORY_MB). A table
// gets its statistics at its first lookup; the budget is shared so that the order in which
// tables come (threads registering at once) decides as little as possible:
//  * each table registered and not placed yet keeps its smallest statistics reserved
//    (stats::fit_state_to(rows, cfg, 0): exact counts wherever those are smaller than a sketch),
//    so no table is refused while the budget could hold every table's smallest statistics;
//  * a table placed gets, of what is left beyond those reserves, its share in proportion to
//    its full statistics' bound: when all registered tables fit in full, each gets its full
//    statistics, in whatever order they come;
//  * what a table holds as it reads is reserved as it comes: its counts and exact LRU stack
//    follow the distinct rows it read (stats::StateNeed: before each batch room for what its
//    indices can add, after it what they did add), so a table that read 3,000 of its million
//    rows holds kilobytes per row read, not 190 MB; its ordered sample starts at
//    kFirstOrderedRefs references and is raised before the references that need more, and
//    room for kFirstWindows closed drift windows is raised before a flush would hold more
//    (up to what its share allowed each, from what the budget has beyond the reserves; a raise
//    refused thins its sample sooner, or lets its drift window run on to the next close, and
//    counts it as sized down). A table read a few times reserves kilobytes, not its worst case.
// A table for which even its smallest statistics do not fit what is left gets none: its
// lookups are refused, counted.
class TableCounts {
 public:
  static constexpr uint64_t kFirstOrderedRefs = 256;
  static constexpr uint32_t kFirstWindows = 2;
  // Rows per drift window of a table that gave up its LRU curve for its counts (shed_for_counts).
  static constexpr uint32_t kShedDriftTopK = 16;
  explicit TableCounts(const stats::StatsConfig& cfg, uint64_t budget_bytes = UINT64_MAX)
      : cfg_(cfg), budget_(budget_bytes) {}
  // Caller holds mutex(). `registry`: the process's tables (those not placed yet keep their
  // smallest statistics reserved); nullptr: none known beyond `t`.
  void add_locked(const TableInfo& t, const void* indices, uint64_t n, int type, const Registry* registry = nullptr);
  void add_counted_locked(const TableInfo& t, const stats::CountedSegment& segment, const Registry* registry = nullptr);
  // A batch of `n` indices about to be counted on the device: the table is placed now, at
  // the configured sizes its device counters use, so that a table the budget refuses gets no
  // device counters either. False when it is refused: its lookups are counted as refused.
  bool admit_counted_locked(const TableInfo& t, uint64_t n, const Registry* registry = nullptr);
  void close_windows_locked();
  // Deltas of the tables with ids below `registered` (those whose registration is already on
  // the wire) with something pending, closing the window first when asked. A table registered
  // after the flush took its registrations keeps its counts for the next flush: a delta sent
  // before its table's registration would be refused by the collector and lost.
  // Returns the lookups the deltas hold.
  uint64_t take_deltas_locked(bool close_window, uint32_t registered, std::vector<wire::TableDelta>& out);
  // A copy of what table `id` counted since its last delta (weight snapshots rank rows by it).
  stats::TableAggregate pending_locked(uint32_t id) const;
  std::mutex& mutex() { return mu_; }

  // Since the last call (caller holds mutex()): lookups refused for want of room, tables
  // that got no statistics, tables whose statistics were sized down.
  struct BudgetNews {
    uint64_t refused_lookups = 0;
    uint32_t refused_tables = 0, downsized_tables = 0;
  };
  BudgetNews take_budget_news_locked();
  uint64_t reserved_bytes_locked() const { return used_ + scratch_; }

 private:
  struct Entry {
    std::unique_ptr<stats::TableIngestor> ing;
    bool pending = false;
    bool refused = false;
    bool downsized = false;       // counted in news_.downsized_tables
    uint64_t rows = 0;
    // What its part of used_ is the bound of: its config with the ordered sample at the bound
    // it has now and max_windows at the closed windows there is room for.
    stats::StatsConfig held;
    // What it has read, as far as its reservation covers: raised before each batch to the
    // rows read so far plus the batch (raise_need), lowered to what was read after it.
    stats::StateNeed need;
    uint64_t refs = 0;            // in-range or not, the indices it was given (host batches)
    uint64_t last_read = 0;       // reads_ at its latest batch (the LRU curve shed first: oldest)
    uint64_t reserved = 0;        // state_bound_bytes(rows, need, held) less its scratch (scratch_)
    uint64_t order_cap = 0;       // what its ordered sample may be raised to
    uint32_t windows_cap = 0;     // its config's max_windows
    uint32_t windows_closed = 0;  // drift windows closed since its last delta
    bool delta_out = false;       // its delta went out with the latest flush (take_deltas_locked)
  };
  const stats::StatsConfig cfg_;
  const uint64_t budget_;
  std::mutex mu_;
  // `first`: the indices of the batch that places it (UINT64_MAX: a device-counted table,
  // held to its worst case, which its device counters were laid out for).
  Entry& entry(const TableInfo& t, const Registry* registry, bool fit, uint64_t first);
  // Adds the tables registered since the last call to the reserve of tables not placed yet.
  void note_registered(const Registry* registry);
  uint64_t smallest_bytes(uint64_t rows) const;  // bound of a table's smallest statistics
  uint64_t full_bytes(uint64_t rows) const;      // bound of its full statistics
  // Raises the table's ordered sample bound before `n` more references, as far as its cap and
  // the budget beyond the reserve allow.
  void raise_order_limit(Entry& e, uint64_t n);
  // Closes the table's drift window if there is room for one more closed window (raised as
  // the budget allows); else its window runs on to the next close.
  void close_window(Entry& e);
  // Makes `to` the held config (and `need` what it is held to) if the budget beyond the
  // reserves has room for it.
  bool try_hold(Entry& e, const stats::StatsConfig& to);
  bool try_hold(Entry& e, const stats::StatsConfig& to, const stats::StateNeed& need);
  // Before a host batch of n indices: the reservation covers the rows it can add (false: the
  // budget has no room, the batch is refused). settle_need() after it: back to what was read.
  bool raise_need(Entry& e, uint64_t n);
  void settle_need(Entry& e);
  void mark_downsized(Entry& e);
  std::vector<Entry> tables_;  // by table id
  uint64_t used_ = 0;          // sum of the tables' reserved bytes
  // The largest scratch a table's bound has (stats::state_scratch_bytes): tables count and
  // flush one at a time under mu_, so that much is reserved once, not per table.
  uint64_t scratch_ = 0;
  uint64_t reads_ = 0;  // host batches counted (Entry::last_read)
  uint64_t left() const { return budget_ - std::min(budget_, used_ + scratch_); }
  // What holding `to` at `want` adds to used_ + scratch_ (0 when it shrinks).
  uint64_t extra_for(const Entry& e, const stats::StatsConfig& to, const stats::StateNeed& want, uint64_t& held,
                     uint64_t& scratch) const;
  // The budget has no room for a table's statistics or a batch's rows: the placed table
  // read least recently that still has an LRU curve gives it up (a table the job is done
  // with has its whole curve recorded already), and all but
  // kShedDriftTopK rows of its drift windows (its counts stay exact; the distances it
  // recorded stay). False when no table has an LRU curve left to give.
  bool shed_one_lru();
  void shed_lru(Entry& e);
  uint32_t noted_ = 0;         // registry tables [0, noted_) are known here
  uint64_t waiting_min_ = 0;   // smallest statistics of the tables noted and not placed
  uint64_t waiting_full_ = 0;  // their full statistics
  BudgetNews news_;
};

// Memory events, notes and drop counters, taken at each flush.
class EventLog {
 public:
  explicit EventLog(uint64_t max_events) : max_events_(max_events) {}
  // False (and counted as a drop) when max_events are already waiting.
  bool add_memory_event(const wire::MemEvent& e);
  void add_note(wire::Note n);
  // A counter of the catalog (core/drops: an unknown name does not compile); no allocation for
  // a counter seen before.
  void count_drop(drops::Name counter, uint64_t n) { add_drop(counter.view(), n); }
  // One member of a family ("kernel_launches_args_unread:" + the kernel's name).
  void count_family_drop(drops::Family family, std::string_view item, uint64_t n);
  bool any() const;
  void take(std::vector<wire::MemEvent>& events, std::vector<wire::Note>& notes,
            std::vector<std::pair<std::string, uint64_t>>& dropped);
  // Every drop counter as it is now (absolute), whether or not it changed; the next take()
  // says them again.
  void take_drops(std::vector<std::pair<std::string, uint64_t>>& dropped);

 private:
  void add_drop(std::string_view counter, uint64_t n);
  const uint64_t max_events_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t, std::less<>> drops_;  // found by a char* without a copy
  bool drops_dirty_ = false;
  std::vector<wire::MemEvent> events_;
  std::vector<wire::Note> notes_;
};

// Per kernel name: launches, GPU time, tables its pointer arguments point into, and per
// (kernel, table) the launches and GPU time.
class KernelBook {
 public:
  void launch(const std::string& name, const std::vector<std::string>& tables);
  // The same with n table names; allocates nothing for a kernel and tables seen before.
  void launch(const std::string& name, const std::string* const* tables, size_t n);
  // GPU time of one launch; `tables`: the tables that launch read.
  void time(const std::string& name, uint64_t ns, const std::vector<std::string>& tables);
  bool dirty() const;
  void mark_dirty();
  std::optional<std::vector<wire::Kernel>> take_if_dirty();

 private:
  struct PerTable {
    uint64_t launches = 0, total_ns = 0;
  };
  struct Totals {
    uint64_t launches = 0, total_ns = 0;
    std::map<std::string, PerTable> tables;
  };
  mutable std::mutex mu_;
  std::map<std::string, Totals> kernels_;
  bool dirty_ = false;
};

// Per NVTX range name: count, time, lookups and bytes allocated inside it.
struct RangeTotals {
  std::string name;
  std::atomic<uint64_t> count{0}, total_ns{0}, lookups{0}, alloc_bytes{0};
};

class RangeBook {
 public:
  ~RangeBook();
  // Stable pointer for the session's lifetime.
  RangeTotals* named(const std::string& name);
  void mark_dirty() { dirty_.store(true, std::memory_order_relaxed); }
  bool dirty() const { return dirty_.load(); }
  std::optional<std::vector<wire::Range>> take_if_dirty();

 private:
  std::mutex mu_;
  std::unordered_map<std::string, RangeTotals*> ranges_;
  std::atomic<bool> dirty_{false};
};

class Session {
 public:
  // `quiet`: a forked child that has only inherited the registry stays silent (no session
  // row) until it registers, reads, steps, opens a range or allocates.
  Session(const SessionIdentity& id, const SinkTarget& sink, const stats::StatsConfig& stats,
          uint64_t max_queue_bytes, uint64_t max_events, bool quiet, uint64_t max_state_bytes = UINT64_MAX);

  const SessionIdentity id;
  // Distinguishes sessions of one process (thread-local range stacks survive a fork).
  const uint64_t serial;

  // Flush bookkeeping (flush_mu).
  std::mutex flush_mu;
  bool open = false;
  bool goodbye_sent = false;
  std::atomic<bool> said_hello{false};  // `open`, readable without flush_mu
  RegistryCursor sent;
  uint64_t steps_sent = 0;
  uint64_t unsent_lookups = 0;   // lookups in flushes the sink could not deliver
  uint64_t kept_lookups = 0;     // lookups in flushes the sink kept in the unsent file (sink.h)
  uint64_t downsized_tables = 0; // tables whose statistics were sized down (flush.cpp)
  bool loss_reported = false;    // the exit-time line about them was printed

  TableCounts counts;
  IngestQueue queue;
  EventLog events;
  KernelBook kernels;
  RangeBook ranges;
  WeightFrames weight_frames;
  Sink sink;
  std::atomic<uint64_t> steps{0};
  std::atomic<bool> quiet;

  // Background thread (lifecycle.cpp).
  std::mutex start_mu;
  // Held by the background thread for each round of work (draining, polling, flushing), so
  // that fork() can wait until it is back to waiting: a fork while that thread is inside
  // malloc leaves the child with the allocator's lock taken if the allocator has no fork
  // handler of its own (AddressSanitizer's does not: a forked worker hung at exit).
  std::mutex bg_work_mu;
  std::thread* bg = nullptr;
  std::atomic<bool> bg_running{false};
  std::atomic<bool> bg_entered{false};  // the background thread has reached its loop
  std::atomic<bool> need_start{true};

  // A fatal signal the process sends itself (flush_before_fatal_signal): requests counted in
  // sig_req, answered by the background thread in sig_done; sig_final is the signal.
  std::atomic<uint64_t> sig_req{0}, sig_done{0};
  std::atomic<int> sig_final{0};
  std::atomic<int64_t> sig_req_ns{0};  // when the latest request came (monotonic)
  std::atomic<bool> exited{false};

  // Held by drain() from taking the queued batches until they are counted (or put back): a
  // second drainer (a weight snapshot ranking rows while the background thread drains) must
  // not find the queue empty while batches taken from it are not counted yet.
  std::mutex drain_mu;

  // Counts the queued host batches (and applies window markers), oldest first. `give_up`
  // (checked between batches) ends it early: the rest goes back to the queue, or with
  // `drop_rest` is dropped and counted ("batches", "indices").
  void drain(const Registry& registry, const std::function<bool()>& give_up = {}, bool drop_rest = false);
  // True when a flush would have something to say even without an open session.
  bool anything_to_say(uint32_t registered_tables) const;
};

}  // namespace edo::capture
