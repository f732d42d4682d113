// The tracer's flush as functions: a session's snapshot (take_snapshot) and its frames
// (encode_flush), and the post-fork reset (a new Session on the same registry).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "edo/edo.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"
#include "flush.h"
#include "registry.h"
#include "session.h"

using namespace edo::capture;
namespace wire = edo::wire;

namespace {

std::vector<wire::Message> decode_all(const std::string& bytes) {
  wire::StreamDecoder d;
  d.feed(bytes.data(), bytes.size());
  std::vector<wire::Message> out;
  wire::Message m;
  while (true) {
    auto r = d.next(m);
    if (r.status == wire::StreamDecoder::Status::kNeedMore) break;
    EXPECT_EQ(r.status, wire::StreamDecoder::Status::kMessage) << r.error;
    out.push_back(m);
  }
  EXPECT_EQ(d.pending_bytes(), 0u);
  return out;
}

std::vector<wire::MsgType> types_of(const std::vector<wire::Message>& ms) {
  std::vector<wire::MsgType> t;
  for (const auto& m : ms) t.push_back(wire::type_of(m));
  return t;
}

Session* new_session(int64_t pid, bool quiet = false) {
  SessionIdentity id;
  id.pid = pid;
  id.ppid = 1;
  return new Session(id, SinkTarget{}, edo::stats::StatsConfig{}, 1 << 20, 1 << 10, quiet);
}

}  // namespace

TEST(FlushEncode, FramesComeInTheOrderTheCollectorNeeds) {
  FlushSnapshot s;
  s.hello = wire::Hello{};
  s.hello->pid = 42;
  s.tables = {{0, "a", 0x1000, 10, 4, EDO_F32, EDO_HOST, -1}, {1, "b", 0x1000, 10, 4, EDO_F32, EDO_HOST, -1}};
  s.extras = {{0, "adam", 320}};
  s.ties = {{0, 1}};
  s.deltas = {{0, "x"}};
  s.steps = 7;
  s.notes = {{"cupti", "active"}};
  s.memory_events.resize(kMaxEventsPerFrame + 5);
  s.dropped = {{"batches", 3}};
  s.kernels = std::vector<wire::Kernel>{{"k", 1, 2, {"a"}, {{"a", 1, 2}}}};
  s.ranges = std::vector<wire::Range>{{"r", 1, 2, 3, 4}};
  s.goodbye = wire::Goodbye{5, wire::EndReason::kExit, 0};
  const auto ms = decode_all(encode_flush(s));
  using T = wire::MsgType;
  EXPECT_EQ(types_of(ms), (std::vector<T>{T::kHello, T::kTable, T::kTable, T::kExtraBytes, T::kTie, T::kTableDelta,
                                          T::kSteps, T::kNote, T::kMemoryEvents, T::kMemoryEvents, T::kDropped,
                                          T::kKernelStats, T::kRangeStats, T::kGoodbye}));
  // Memory events are split into frames of at most kMaxEventsPerFrame, none lost.
  EXPECT_EQ(std::get<wire::MemoryEvents>(ms[8]).events.size(), kMaxEventsPerFrame);
  EXPECT_EQ(std::get<wire::MemoryEvents>(ms[9]).events.size(), 5u);
  EXPECT_EQ(std::get<wire::Steps>(ms[6]).steps, 7u);
}

TEST(FlushEncode, AnEmptySnapshotIsNoBytes) { EXPECT_TRUE(encode_flush(FlushSnapshot{}).empty()); }

TEST(FlushSnapshot, SendsEachThingOnceAndOnlyWhatChanged) {
  Registry reg(true);
  std::unique_ptr<Session> s(new_session(100));
  static float w[40];
  ASSERT_EQ(reg.add("a", w, 10, 4, EDO_F32, EDO_HOST), 0);
  ASSERT_EQ(reg.add("a_tied", w, 10, 4, EDO_F32, EDO_HOST), 1);
  ASSERT_EQ(reg.set_extra_bytes(0, "adam", 320), EDO_OK);
  const int64_t idx[] = {1, 2, 2, 9};
  {
    std::lock_guard<std::mutex> lk(s->counts.mutex());
    s->counts.add_locked(*reg.get(0), idx, 4, EDO_I64);
  }
  s->steps = 3;
  s->kernels.launch("gather", {"a"});
  s->events.add_note({"k", "v"});

  FlushSnapshot first = take_snapshot(*s, reg, true);
  EXPECT_FALSE(first.hello);  // the caller adds Hello and Goodbye
  ASSERT_EQ(first.tables.size(), 2u);
  EXPECT_EQ(first.tables[1].name, "a_tied");
  ASSERT_EQ(first.ties.size(), 1u);
  EXPECT_EQ(first.ties[0].tied_with, 1u);
  ASSERT_EQ(first.extras.size(), 1u);
  EXPECT_EQ(first.extras[0].bytes, 320u);
  ASSERT_EQ(first.deltas.size(), 1u);
  edo::stats::TableAggregate agg;
  ASSERT_TRUE(edo::stats::TableAggregate::deserialize(first.deltas[0].aggregate, agg));
  EXPECT_EQ(agg.lookups(), 4u);
  EXPECT_EQ(agg.count(2), 2u);
  EXPECT_EQ(first.steps, 3u);
  ASSERT_TRUE(first.kernels);
  EXPECT_EQ((*first.kernels)[0].launches, 1u);
  EXPECT_EQ(first.notes.size(), 1u);

  FlushSnapshot second = take_snapshot(*s, reg, true);
  EXPECT_TRUE(encode_flush(second).empty()) << "nothing changed, nothing to send";

  ASSERT_EQ(reg.set_extra_bytes(1, "grad", 160), EDO_OK);
  FlushSnapshot third = take_snapshot(*s, reg, true);
  ASSERT_EQ(third.extras.size(), 1u);
  EXPECT_EQ(third.extras[0].table, 1u);
  EXPECT_TRUE(third.tables.empty());
}

TEST(FlushSnapshot, ANewSessionStartsFromTheRegistryAlone) {
  // What a fork child does: a new Session on the process's registry. The registry (tables,
  // ties, extras) is sent again; nothing the parent's session held (pending counts, steps,
  // kernels, notes, events) comes with it.
  Registry reg(true);
  std::unique_ptr<Session> parent(new_session(100));
  static float w[40];
  reg.add("a", w, 10, 4, EDO_F32, EDO_CUDA);
  reg.add("b", w, 10, 4, EDO_F32, EDO_CUDA);
  reg.set_extra_bytes(0, "adam", 320);
  (void)take_snapshot(*parent, reg, true);
  const int64_t idx[] = {1, 2, 3};
  {
    std::lock_guard<std::mutex> lk(parent->counts.mutex());
    parent->counts.add_locked(*reg.get(0), idx, 3, EDO_I64);
  }
  parent->steps = 9;
  parent->kernels.launch("k", {});
  parent->events.add_memory_event({1, 64, 0x1000, 0, 0, "cudaMalloc"});
  parent->events.count_drop("batches", 1);
  parent->ranges.named("r")->count = 1;
  parent->ranges.mark_dirty();

  std::unique_ptr<Session> child(new_session(101, /*quiet=*/true));
  EXPECT_NE(child->serial, parent->serial);
  EXPECT_FALSE(child->anything_to_say(reg.size())) << "a child that only inherited the registry stays silent";
  FlushSnapshot c = take_snapshot(*child, reg, true);
  EXPECT_EQ(c.tables.size(), 2u);
  EXPECT_EQ(c.ties.size(), 1u);
  EXPECT_EQ(c.extras.size(), 1u);
  EXPECT_TRUE(c.deltas.empty());
  EXPECT_FALSE(c.steps);
  EXPECT_FALSE(c.kernels);
  EXPECT_FALSE(c.ranges);
  EXPECT_TRUE(c.memory_events.empty());
  EXPECT_TRUE(c.dropped.empty());
  child->quiet = false;
  EXPECT_TRUE(child->anything_to_say(reg.size()));
  // The parent's pending data is still the parent's.
  FlushSnapshot p = take_snapshot(*parent, reg, true);
  EXPECT_EQ(p.deltas.size(), 1u);
  EXPECT_EQ(p.steps, 9u);
  EXPECT_EQ(p.memory_events.size(), 1u);
}

TEST(FlushSnapshot, QueuedBatchesAndWindowMarkersDrainInOrder) {
  Registry reg(false);
  std::unique_ptr<Session> s(new_session(100));
  static float w[400];
  reg.add("t", w, 100, 4, EDO_F32, EDO_HOST);
  const int32_t a[] = {1, 1, 1}, b[] = {2};
  ASSERT_EQ(s->queue.push_copy(0, a, 3, EDO_I32, 4), IngestQueue::Push::kOk);
  s->queue.push_window_marker();
  ASSERT_EQ(s->queue.push_copy(0, b, 1, EDO_I32, 4), IngestQueue::Push::kOk);
  ASSERT_EQ(s->queue.push_copy(7, b, 1, EDO_I32, 4), IngestQueue::Push::kOk);  // unknown table: ignored
  s->drain(reg);
  FlushSnapshot snap = take_snapshot(*s, reg, true);
  ASSERT_EQ(snap.deltas.size(), 1u);
  edo::stats::TableAggregate agg;
  ASSERT_TRUE(edo::stats::TableAggregate::deserialize(snap.deltas[0].aggregate, agg));
  EXPECT_EQ(agg.lookups(), 4u);
  ASSERT_EQ(agg.windows().size(), 2u) << "the marker closed a window between the batches";
  EXPECT_EQ(agg.windows()[0].lookups, 3u);
  EXPECT_EQ(agg.windows()[1].lookups, 1u);
}

TEST(IngestQueue, IsBoundedByBytes) {
  IngestQueue q(16);
  const int32_t x[4] = {};
  EXPECT_EQ(q.push_copy(0, x, 4, EDO_I32, 4), IngestQueue::Push::kOk);
  EXPECT_EQ(q.push_copy(0, x, 1, EDO_I32, 4), IngestQueue::Push::kFull);
  auto work = q.take();
  ASSERT_EQ(work.size(), 1u);
  q.recycle(work);
  EXPECT_EQ(q.push_copy(0, x, 4, EDO_I32, 4), IngestQueue::Push::kOk) << "recycled bytes are free again";
}

// 64-bit ids that all fit in [0, 2^31) are queued as int32 (half the bytes, the same values);
// a batch with one id outside (negative, 2^31 and up) keeps its 64 bits.
TEST(IngestQueue, SixtyFourBitIdsThatFitAreQueuedAs32Bit) {
  IngestQueue q(1 << 20);
  const int64_t fit[] = {0, 5, 2147483647}, neg[] = {7, -1}, big[] = {2147483648, 1};
  ASSERT_EQ(q.push_copy(0, fit, 3, EDO_I64, 8), IngestQueue::Push::kOk);
  ASSERT_EQ(q.push_copy(0, neg, 2, EDO_I64, 8), IngestQueue::Push::kOk);
  ASSERT_EQ(q.push_copy(0, big, 2, EDO_I64, 8), IngestQueue::Push::kOk);
  auto work = q.take();
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0]->type, EDO_I32);
  EXPECT_EQ(work[0]->bytes, 12u);
  const auto* n = reinterpret_cast<const int32_t*>(work[0]->data.get());
  EXPECT_EQ(std::vector<int32_t>(n, n + 3), (std::vector<int32_t>{0, 5, 2147483647}));
  for (int i : {1, 2}) {
    EXPECT_EQ(work[i]->type, EDO_I64);
    EXPECT_EQ(work[i]->bytes, 16u);
  }
  EXPECT_EQ(std::memcmp(work[1]->data.get(), neg, 16), 0);
  EXPECT_EQ(std::memcmp(work[2]->data.get(), big, 16), 0);
  q.recycle(work);
}

// The narrowing copy checks and copies in one pass, block by block: an id outside [0, 2^31) at
// any place (the first block, a block's last id, the tail after the last whole block) still
// sends the whole batch as it was, 64-bit, into a buffer that already held a narrowed part.
TEST(IngestQueue, AnIdThatDoesNotFitAnywhereKeepsTheBatchExact) {
  IngestQueue q(1 << 20);
  constexpr size_t n = 37;  // two blocks of 16 and a tail of 5
  for (int64_t odd : {int64_t{2147483648}, int64_t{-1}, INT64_MIN, INT64_MAX, int64_t{1} << 40}) {
    for (size_t at = 0; at < n; ++at) {
      std::vector<int64_t> ids(n);
      for (size_t i = 0; i < n; ++i) ids[i] = int64_t(i * 1000 + 2147400000 * (i % 2));  // up to 2^31 - 48k: all fit
      ids[at] = odd;
      ASSERT_EQ(q.push_copy(3, ids.data(), n, EDO_I64, 8), IngestQueue::Push::kOk);
      auto work = q.take();
      ASSERT_EQ(work.size(), 1u);
      EXPECT_EQ(work[0]->type, EDO_I64) << "id " << odd << " at " << at;
      EXPECT_EQ(work[0]->bytes, n * 8);
      EXPECT_EQ(work[0]->count, n);
      EXPECT_EQ(work[0]->table, 3);
      EXPECT_EQ(std::memcmp(work[0]->data.get(), ids.data(), n * 8), 0) << "id " << odd << " at " << at;
      q.recycle(work);  // the next batch reuses this buffer: its narrowed bytes must not show
    }
  }
  std::vector<int64_t> fit(n);
  for (size_t i = 0; i < n; ++i) fit[i] = i == n - 1 ? 2147483647 : int64_t(i * 7);
  ASSERT_EQ(q.push_copy(3, fit.data(), n, EDO_I64, 8), IngestQueue::Push::kOk);
  auto work = q.take();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0]->type, EDO_I32);
  EXPECT_EQ(work[0]->bytes, n * 4);
  const auto* got = reinterpret_cast<const int32_t*>(work[0]->data.get());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(int64_t(got[i]), fit[i]) << i;
  q.recycle(work);
}

// A 64-bit batch is first given room for 4 bytes an id: one that then does not fit in int32 is
// refused exactly when its 8 bytes an id would not fit (kFull, as before the narrowing), and
// the bytes it held are free again.
TEST(IngestQueue, AWideBatchIsBoundedByItsEightBytesAnId) {
  IngestQueue q(64);
  const int64_t wide[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, int64_t{1} << 40};  // 40 bytes narrowed, 80 as they are
  EXPECT_EQ(q.push_copy(0, wide, 10, EDO_I64, 8), IngestQueue::Push::kFull);
  EXPECT_EQ(q.pooled_bytes(), 40u) << "its buffer (narrowed, 40 bytes) is kept for the next batch";
  const int64_t fit[16] = {};
  EXPECT_EQ(q.push_copy(0, fit, 16, EDO_I64, 8), IngestQueue::Push::kOk) << "all 64 bytes are free";
  EXPECT_EQ(q.push_copy(0, fit, 1, EDO_I64, 8), IngestQueue::Push::kFull);
  auto work = q.take();
  ASSERT_EQ(work.size(), 1u);
  q.recycle(work);
  EXPECT_EQ(q.push_copy(0, wide, 8, EDO_I64, 8), IngestQueue::Push::kOk) << "8 ids that fit: 32 bytes";
  EXPECT_EQ(q.push_copy(0, wide + 2, 8, EDO_I64, 8), IngestQueue::Push::kFull) << "64 bytes past the 32 left";
  EXPECT_EQ(q.push_copy(0, wide + 6, 4, EDO_I64, 8), IngestQueue::Push::kOk) << "32 bytes as they are: exactly the room left";
  work = q.take();
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[1]->type, EDO_I64);
  EXPECT_EQ(std::memcmp(work[1]->data.get(), wide + 6, 32), 0);
  q.recycle(work);
}

// The recycled buffers kept grow with what one take() handed over (beyond kPoolBytes), so a
// backlog the background thread caught up with is served again without new memory; they
// shrink back once takes are small again, and never hold more than the bound leaves free.
TEST(IngestQueue, PoolFollowsTheBacklogWithinTheBound) {
  const uint64_t batch = 64 << 10, big = IngestQueue::kPoolBytes + (8 << 20);
  const std::vector<int64_t> ids(batch / 8, int64_t{1} << 40);
  IngestQueue q(uint64_t{64} << 20);
  for (uint64_t b = 0; b < big; b += batch) ASSERT_EQ(q.push_copy(0, ids.data(), ids.size(), EDO_I64, 8), IngestQueue::Push::kOk);
  auto work = q.take();
  q.recycle(work);
  EXPECT_EQ(q.pooled_bytes(), big) << "the whole backlog's buffers are kept";
  for (int i = 0; i < 200; ++i) q.take();  // idle: the peak decays
  EXPECT_EQ(q.pooled_bytes(), IngestQueue::kPoolBytes);

  // A bound below kPoolBytes: buffers queued and kept together stay within it.
  IngestQueue small(uint64_t{4} << 20);
  auto push_mib = [&](uint64_t mib) {
    for (uint64_t b = 0; b < (mib << 20); b += batch)
      ASSERT_EQ(small.push_copy(0, ids.data(), ids.size(), EDO_I64, 8), IngestQueue::Push::kOk);
  };
  push_mib(3);
  auto first = small.take();
  push_mib(1);  // while the first 3 MiB are being counted: fresh buffers
  small.recycle(first);
  EXPECT_EQ(small.pooled_bytes(), uint64_t{3} << 20);
  auto second = small.take();
  small.recycle(second);
  EXPECT_EQ(small.pooled_bytes(), uint64_t{4} << 20) << "all of it, the bound";
  push_mib(4);
  EXPECT_EQ(small.pooled_bytes(), 0u) << "every kept buffer was reused";
  EXPECT_EQ(small.push_copy(0, ids.data(), 1, EDO_I64, 8), IngestQueue::Push::kFull);
}

// The background thread sleeps through small pushes (its periodic wake-up takes them) and is
// woken once a quarter of the bound is queued, or by a window marker: a waiter whose deadline
// is an hour away returns (a missed wake-up hangs the test until ctest's timeout).
TEST(IngestQueue, WakesTheConsumerForAQuarterOfTheBoundOrAMarker) {
  IngestQueue q(4096);  // wakes at 1024 bytes
  const std::vector<int64_t> ids(64, int64_t{1} << 40);  // past int32: queued as 8 bytes each
  const auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  for (int round = 0; round < 2; ++round) {
    std::thread consumer([&] { EXPECT_FALSE(q.wait_until(far)); });
    if (round == 0) {
      for (int i = 0; i < 2; ++i) ASSERT_EQ(q.push_copy(0, ids.data(), 64, EDO_I64, 8), IngestQueue::Push::kOk);
    } else {
      ASSERT_EQ(q.push_copy(0, ids.data(), 1, EDO_I64, 8), IngestQueue::Push::kOk);
      q.push_window_marker();
    }
    consumer.join();
    auto work = q.take();
    EXPECT_EQ(work.size(), 2u);
    for (Batch* b : work) EXPECT_EQ(b->count, b->table < 0 ? 0u : (round == 0 ? 64u : 1u));
    q.recycle(work);
  }
}

// EDO_MAX_EVENTS: memory events beyond the bound between two flushes are dropped and counted,
// and the counter (absolute) rides on the flush's Dropped frame.
TEST(FlushSnapshot, MemoryEventsBeyondTheBoundAreCounted) {
  Registry reg(false);
  SessionIdentity id;
  id.pid = 7;
  std::unique_ptr<Session> s(new Session(id, SinkTarget{}, edo::stats::StatsConfig{}, 1 << 20, 16, false));
  for (int i = 0; i < 20; ++i) s->events.add_memory_event({i, 64, uint64_t(0x1000 + 64 * i), 0, 0, "cudaMalloc"});
  FlushSnapshot snap = take_snapshot(*s, reg, true);
  EXPECT_EQ(snap.memory_events.size(), 16u);
  ASSERT_EQ(snap.dropped.size(), 1u);
  EXPECT_EQ(snap.dropped[0], (std::pair<std::string, uint64_t>{"memory_events", 4}));
  bool frame = false;
  for (const auto& m : decode_all(encode_flush(snap)))
    if (auto* d = std::get_if<wire::Dropped>(&m)) frame = d->counters == snap.dropped;
  EXPECT_TRUE(frame);
  // Unchanged counters are not sent again; a later drop sends the new absolute value.
  EXPECT_TRUE(take_snapshot(*s, reg, true).dropped.empty());
  for (int i = 0; i < 17; ++i) s->events.add_memory_event({i, 64, 0x9000, 0, 0, "cudaMalloc"});
  EXPECT_EQ(take_snapshot(*s, reg, true).dropped, (std::vector<std::pair<std::string, uint64_t>>{{"memory_events", 5}}));
}

// A flush that must end in time (a fatal signal's) counts what it can and drops the rest of
// the queue, counted; a drain told to stop without dropping leaves the rest queued.
TEST(FlushSnapshot, DrainThatGivesUpDropsOrRequeuesTheRest) {
  Registry reg(false);
  std::unique_ptr<Session> s(new_session(100));
  static float w[400];
  reg.add("t", w, 100, 4, EDO_F32, EDO_HOST);
  const int32_t a[] = {1, 2, 3};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(s->queue.push_copy(0, a, 3, EDO_I32, 4), IngestQueue::Push::kOk);
  int budget = 1;
  s->drain(reg, [&] { return budget-- <= 0; });  // one batch, the rest back in the queue
  std::vector<Batch*> rest = s->queue.take();
  EXPECT_EQ(rest.size(), 3u);
  s->queue.put_back(rest);
  budget = 1;
  s->drain(reg, [&] { return budget-- <= 0; }, /*drop_rest=*/true);
  EXPECT_TRUE(s->queue.take().empty());
  FlushSnapshot snap = take_snapshot(*s, reg, true);
  EXPECT_EQ(snap.lookups, 6u);
  EXPECT_EQ(snap.dropped, (std::vector<std::pair<std::string, uint64_t>>{{"batches", 2}, {"indices", 6}}));
}
