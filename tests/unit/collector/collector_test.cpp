#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <cstring>
#include <filesystem>
#include <map>

#include "edo/collector/collector.h"
#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"
#include "sample_trace.h"

using namespace edo;
using namespace edo::wire;

namespace {

collector::ProfileBuilder& build(collector::ProfileBuilder& b, const std::string& bytes) {
  const int s = b.open_stream("test");
  b.feed(s, bytes.data(), bytes.size());
  b.close_stream(s);
  b.finish();
  return b;
}

}  // namespace

TEST(Collector, SampleTraceBecomesAProfile) {
  collector::ProfileBuilder b("import");
  build(b, sample::sample_stream());
  const model::Profile& p = b.profile();
  EXPECT_TRUE(b.issues().empty());
  ASSERT_EQ(p.sessions.size(), 2u);
  const auto& s = p.sessions[0];
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(*s.rank, 3);
  EXPECT_EQ(*s.local_rank, 1);
  EXPECT_EQ(s.steps, 12u);
  EXPECT_EQ(s.host, "node-7");
  EXPECT_EQ(s.source, "import");
  EXPECT_EQ(*s.exit_code, 128 + 15);  // goodbye: killed by SIGTERM
  EXPECT_EQ(s.dropped_events, 1u);    // "batches" (indices are not events)
  EXPECT_EQ(s.duration_ns, 5000000000);
  EXPECT_FALSE(p.sessions[1].rank.has_value());
  EXPECT_NE(p.sessions[0].id, p.sessions[1].id);

  ASSERT_EQ(p.tables.size(), 2u);
  EXPECT_EQ(p.tables[0].name, "model.emb");
  EXPECT_EQ(p.tables[0].device, "cuda:0");
  EXPECT_EQ(p.tables[0].weight_bytes, 1000u * 16 * 4);
  EXPECT_EQ(p.tables[0].optimizer_bytes, 64000u);
  EXPECT_EQ(p.tables[0].grad_bytes, 0u);
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 5000u);
  EXPECT_EQ(p.tables[0].aggregate.count(31), 5u);
  ASSERT_EQ(p.ties.size(), 1u);
  EXPECT_EQ(p.ties[0].table, "model.emb");
  EXPECT_EQ(p.ties[0].tied_with, "lm_head");

  ASSERT_EQ(p.memory_events.size(), 3u);
  EXPECT_EQ(p.memory_events[0].table, "model.emb");  // attributed by address range
  EXPECT_EQ(p.memory_events[1].table, "");
  EXPECT_EQ(p.memory_events[2].bytes, -4096);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].tables, std::vector<std::string>{"model.emb"});
  ASSERT_EQ(p.ranges.size(), 2u);
  EXPECT_EQ(p.ranges[0].lookups, 5000u);
  EXPECT_EQ(p.metadata.at("cupti"), "unavailable: no CUDA driver");
}

TEST(Collector, DeltasAddUpAndExtraBytesReplace) {
  std::string s;
  Hello h;
  h.pid = 1;
  encode(h, s);
  encode(TableReg{5, "t", 0x1000, 100, 4, 0, 0, -1}, s);
  stats::TableIngestor ing(100, stats::StatsConfig{});
  std::vector<int32_t> a(50, 7), c(25, 9);
  ing.add(a.data(), a.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  ing.add(c.data(), c.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  encode(ExtraBytes{5, "adam.exp_avg", 100}, s);
  encode(ExtraBytes{5, "adam.exp_avg", 300}, s);
  encode(ExtraBytes{5, "grad", 5}, s);
  encode(Steps{3}, s);
  encode(Steps{4}, s);  // absolute
  collector::ProfileBuilder b("record");
  build(b, s);
  const auto& t = b.profile().tables.at(0);
  EXPECT_EQ(t.device, "host");
  EXPECT_EQ(t.aggregate.lookups(), 75u);
  EXPECT_EQ(t.aggregate.count(7), 50u);
  EXPECT_EQ(t.aggregate.count(9), 25u);
  EXPECT_EQ(t.aggregate.unique_rows(), 2u);
  EXPECT_EQ(t.optimizer_bytes, 300u);  // adam.exp_avg, replaced
  EXPECT_EQ(t.grad_bytes, 5u);
  EXPECT_EQ(b.profile().sessions[0].steps, 4u);
  b.set_exit_code(1, 7);
  EXPECT_EQ(*b.profile().sessions[0].exit_code, 7);
}

// Held-out validation (issue 19): the collector records when each row was first read, one
// segment per frame's delta: rows 7 and 8 in the first flush, row 9 first in the second.
// The record survives the store (schema 6, table_first_seen).
TEST(Collector, RecordsWhenRowsWereFirstRead) {
  std::string s;
  Hello h;
  h.pid = 1;
  encode(h, s);
  encode(TableReg{5, "t", 0x1000, 100, 4, 0, 0, -1}, s);
  stats::TableIngestor ing(100, stats::StatsConfig{});
  std::vector<int32_t> first{7, 7, 8, 7}, second{7, 9, 9, 8, 9, 9};
  ing.add(first.data(), first.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  ing.add(second.data(), second.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  const auto& curve = b.profile().tables.at(0).first_seen;
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[0].position, 0u);
  EXPECT_EQ(curve[0].new_rows, 2u);
  EXPECT_EQ(curve[0].lookups, 6u);  // rows 7 and 8: 4 + 2 lookups in all
  EXPECT_EQ(curve[1].position, 4u);
  EXPECT_EQ(curve[1].new_rows, 1u);
  EXPECT_EQ(curve[1].lookups, 4u);  // row 9
  const model::HeldOut held = model::held_out_split(curve, 10);
  ASSERT_TRUE(held.valid);
  EXPECT_EQ(held.held_out_lookups, 6u);
  EXPECT_EQ(held.lost, 4u);
  const std::string path = (std::filesystem::temp_directory_path() / ("edo_first_seen_" + std::to_string(getpid()) + ".edodb")).string();
  { db::ProfileStore(path, db::ProfileStore::Mode::kCreate).save(b.profile()); }
  const model::Profile back = db::ProfileStore(path, db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(back.tables.at(0).first_seen.size(), 2u);
  EXPECT_EQ(back.tables.at(0).first_seen[1].position, 4u);
  EXPECT_EQ(back.tables.at(0).first_seen[1].lookups, 4u);
  std::filesystem::remove(path);
}

// Caches from the real stream (issue 19 point 6): the frames' deltas carry the ordered sample
// of each flush, which the collector joins into the stream's, and the store keeps it.
TEST(Collector, KeepsTheOrderedSampleOfTheStream) {
  std::string s;
  Hello h;
  h.pid = 1;
  encode(h, s);
  encode(TableReg{5, "t", 0x1000, 100, 4, 0, 0, -1}, s);
  stats::TableIngestor ing(100, stats::StatsConfig{});
  std::vector<int32_t> first{7, 7, 8, 7}, second{7, 9, 200, 9, 8};
  ing.add(first.data(), first.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  ing.add(second.data(), second.size());
  encode(TableDelta{5, ing.take_delta().serialize()}, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  const std::string path = (std::filesystem::temp_directory_path() / ("edo_ordered_" + std::to_string(getpid()) + ".edodb")).string();
  { db::ProfileStore(path, db::ProfileStore::Mode::kCreate).save(b.profile()); }
  const model::Profile back = db::ProfileStore(path, db::ProfileStore::Mode::kReadOnly).load();
  std::filesystem::remove(path);
  for (const model::Profile* p : {static_cast<const model::Profile*>(&b.profile()), &back}) {
    const stats::OrderedSample* o = p->tables.at(0).aggregate.ordered_sample();
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(o->valid);
    EXPECT_EQ(o->end, 8u) << "row 200 is out of range: no reference";
    const std::vector<uint64_t> rows{7, 7, 8, 7, 7, 9, 9, 8};
    ASSERT_EQ(o->refs.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(o->refs[i].position, i);
      EXPECT_EQ(o->refs[i].row, rows[i]);
    }
  }
}

TEST(Collector, TruncatedStreamIsReportedWithItsOffset) {
  std::vector<size_t> ends;
  const std::string s = sample::sample_stream(&ends);
  collector::ProfileBuilder b("import");
  build(b, s.substr(0, ends[4] + 10));
  EXPECT_EQ(b.frames(), 5u);
  ASSERT_EQ(b.issues().size(), 1u);
  EXPECT_EQ(b.issues()[0].offset, ends[4]);
  EXPECT_NE(b.issues()[0].message.find("truncated"), std::string::npos);
  EXPECT_EQ(b.profile().tables.at(0).aggregate.lookups(), 5000u);
}

// A frame header damaged so that it still passes the 16-bit header check but claims 1 MiB:
// while the stream is open the decoder waits for the bytes; at its end the frames after the
// damage are decoded and the damage is reported (before, everything after it was lost as a
// "truncated" tail).
TEST(Collector, DamagedLengthDoesNotHideTheFramesAfterIt) {
  std::vector<size_t> ends;
  const std::string s = sample::sample_stream(&ends);
  std::string damaged = s.substr(0, ends[4]) + s.substr(ends[4], kHeaderSize);
  char* h = damaged.data() + ends[4];
  const uint32_t len = 1u << 20;
  for (int b = 0; b < 4; ++b) h[8 + b] = char(len >> (8 * b));
  const char hb[6] = {h[4], h[5], h[8], h[9], h[10], h[11]};
  const uint32_t hc = crc32(hb, 6);
  h[6] = char(hc & 0xFF);
  h[7] = char((hc >> 8) & 0xFF);
  damaged += s.substr(ends[4]);  // then every frame from the fifth on, intact
  collector::ProfileBuilder b("import");
  build(b, damaged);
  EXPECT_EQ(b.frames(), ends.size());
  ASSERT_EQ(b.issues().size(), 1u);
  EXPECT_EQ(b.issues()[0].offset, ends[4]);
  EXPECT_NE(b.issues()[0].message.find("runs past the end of the stream"), std::string::npos) << b.issues()[0].message;
  EXPECT_EQ(b.profile().sessions.size(), 2u);
  EXPECT_EQ(b.profile().sessions[0].steps, 12u);
}

TEST(Collector, FreesInheritTheAttributionOfTheirAllocation) {
  std::string s;
  Hello h;
  encode(h, s);
  encode(TableReg{0, "emb", 0x10100, 10, 4, 0, 1, 0}, s);  // 160 bytes inside a segment
  MemoryEvents me;
  me.events.push_back({1, 1 << 20, 0x10000, 0, 0, "cudaMalloc"});  // segment containing the table
  me.events.push_back({2, -(1 << 20), 0x10000, 0, 0, "cudaFree"});
  me.events.push_back({3, 64, 0x90000, 0, 0, "cudaMalloc"});
  encode(me, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  const auto& ev = b.profile().memory_events;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].table, "emb");
  EXPECT_EQ(ev[1].table, "emb");
  EXPECT_EQ(ev[2].table, "");
  EXPECT_EQ(b.profile().peak_bytes(), 1 << 20);
}

TEST(Collector, ProfileSavesAndLoadsRepeatedly) {
  const std::string path = ::testing::TempDir() + "/collector_test_" + std::to_string(getpid()) + ".edodb";
  collector::ProfileBuilder b("record");
  const int st = b.open_stream("c");
  std::vector<size_t> ends;
  const std::string s = sample::sample_stream(&ends);
  db::ProfileStore store(path, db::ProfileStore::Mode::kCreate);
  b.feed(st, s.data(), ends[5]);
  store.save(b.finish(), false);
  b.feed(st, s.data() + ends[5], s.size() - ends[5]);
  b.close_stream(st);
  store.save(b.finish(), true);
  model::Profile back = db::ProfileStore(path, db::ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(back.sessions.size(), 2u);
  ASSERT_EQ(back.tables.size(), 2u);
  EXPECT_EQ(back.tables[0].aggregate.lookups(), 5000u);
  EXPECT_EQ(back.ties.size(), 1u);
  EXPECT_EQ(back.memory_events.size(), 3u);
  std::filesystem::remove(path);
}

TEST(Collector, SummarySaysWhatWasRecordedAndEveryLoss) {
  collector::ProfileBuilder b("import");
  build(b, sample::sample_stream());
  auto lines = collector::summary_lines(b.profile());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("2 session(s), 2 table(s), 5000 lookups, 1 tie(s)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("dropped events: 1"), std::string::npos) << lines[2];
  // The advice names the one setting that lifts these losses, not every setting there is.
  EXPECT_NE(lines[2].find("(raise EDO_MAX_BUFFER_MB)"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[2].find("EDO_MAX_EVENTS"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3].rfind("  batches: 1 (host lookup batches dropped", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind("  indices: 100 (", 0), 0u) << lines[4];
}

// `edo record --weights`: the summary says how many tables have a snapshot, naming those
// without one; a tied name has its owner's weights and is not counted. Without --weights and
// without snapshots nothing is said.
TEST(Collector, SummaryCountsTablesWithAWeightSnapshot) {
  model::Profile p;
  for (const char* n : {"a", "b", "c", "head"}) {
    model::Table t;
    t.name = n;
    p.tables.push_back(t);
  }
  p.ties.push_back({0, "a", "head"});
  model::WeightSnapshot w;
  w.table = "b";
  w.rows = {1, 2};
  p.weights.push_back(w);
  auto lines = collector::summary_lines(p, true);
  EXPECT_EQ(lines.back(), "weight snapshots: 1 of 3 table(s) (none for a, c)");
  const size_t plain = collector::summary_lines(model::Profile{}, false).size();
  EXPECT_EQ(collector::summary_lines(model::Profile{}, true).back(), "weight snapshots: 0 of 0 table(s)");
  EXPECT_EQ(collector::summary_lines(model::Profile{}, true).size(), plain + 1);
  w.table = "a";
  p.weights.push_back(w);
  w.table = "c";
  p.weights.push_back(w);
  EXPECT_EQ(collector::summary_lines(p, false).back(), "weight snapshots: 3 of 3 table(s)");
}

// Loss counters by name: the tracer's (absolute, the latest replaces the earlier), and the
// collector's own: a session whose stream ends, or is followed by another Hello, without its
// Goodbye lost what it recorded after its last flush.
TEST(Collector, EveryLossCounterIsKeptByName) {
  std::string s;
  Hello h;
  h.pid = 10;
  encode(h, s);
  encode(Dropped{{{"batches", 2}, {"indices", 50}, {"unsent_flushes", 1}, {"unsent_lookups", 70}}}, s);
  encode(Dropped{{{"batches", 3}, {"cupti_activity_records", 4}, {"from_a_newer_tracer", 1}}}, s);
  Hello h2;
  h2.pid = 11;  // the same stream goes on with another session: the first one never said goodbye
  encode(h2, s);
  encode(Goodbye{1, EndReason::kExit, 0}, s);
  Hello h3;
  h3.pid = 12;  // and a third one that is cut off
  encode(h3, s);
  collector::ProfileBuilder b("import");
  build(b, s);
  const auto& ses = b.profile().sessions;
  ASSERT_EQ(ses.size(), 3u);
  EXPECT_EQ(ses[0].drops, (std::map<std::string, uint64_t>{{"batches", 3},
                                                          {"indices", 50},
                                                          {"unsent_flushes", 1},
                                                          {"unsent_lookups", 70},
                                                          {"cupti_activity_records", 4},
                                                          {"from_a_newer_tracer", 1},
                                                          {"ended_without_final_flush", 1}}));
  // Events only: batches, unsent flushes, CUPTI's records and the unknown counter.
  EXPECT_EQ(ses[0].dropped_events, 3u + 1 + 4 + 1);
  EXPECT_TRUE(ses[1].drops.empty());
  EXPECT_EQ(ses[2].drops, (std::map<std::string, uint64_t>{{"ended_without_final_flush", 1}}));
  EXPECT_EQ(ses[2].dropped_events, 0u);
  EXPECT_EQ(b.profile().drops().at("ended_without_final_flush"), 2u);
}

TEST(Collector, StreamsStillOpenAtTheEndAreSessionsWithoutFinalFlush) {
  std::string s;
  encode(Hello{}, s);
  collector::ProfileBuilder b("record");
  const int st = b.open_stream("c");
  b.feed(st, s.data(), s.size());
  EXPECT_TRUE(b.profile().sessions[0].drops.empty());
  b.close_all_streams();
  EXPECT_EQ(b.profile().sessions[0].drops.at("ended_without_final_flush"), 1u);
  EXPECT_EQ(b.open_streams(), 0u);
}

// Issue 30 §6: a connection that ends before its process's first frame (it died right after
// connecting) is a session of its own for the peer, marked ended_without_final_flush; a stream
// without a known peer (a file) adds none.
TEST(Collector, AConnectionThatEndsBeforeItsFirstFlushIsASession) {
  collector::ProfileBuilder b("record");
  const int st = b.open_stream("connection 1", {4321, 4320, "python train.py", "node7"});
  const int anonymous = b.open_stream("empty file");
  b.close_all_streams();
  ASSERT_EQ(b.profile().sessions.size(), 1u);
  const auto& ses = b.profile().sessions[0];
  EXPECT_EQ(ses.pid, 4321);
  EXPECT_EQ(ses.parent_pid, 4320);
  EXPECT_EQ(ses.command, "python train.py");
  EXPECT_EQ(ses.host, "node7");
  EXPECT_EQ(ses.drops.at("ended_without_final_flush"), 1u);
  // A peer that sent its Hello is the Hello's session, not a second one.
  collector::ProfileBuilder b2("record");
  std::string bytes;
  Hello h;
  h.pid = 4321;
  encode(h, bytes);
  const int st2 = b2.open_stream("connection 1", {4321, 4320, "", "node7"});
  b2.feed(st2, bytes.data(), bytes.size());
  b2.close_stream(st2);
  ASSERT_EQ(b2.profile().sessions.size(), 1u);
  EXPECT_EQ(b2.profile().sessions[0].drops.at("ended_without_final_flush"), 1u);
  (void)st;
  (void)anonymous;
}

// The reply to `edo record`'s flush request is counted, not stored as a fact.
TEST(Collector, FlushRepliesAreCountedNotStored) {
  std::string s;
  encode(Hello{}, s);
  encode(Note{kFlushReplyNote, ""}, s);
  encode(Note{"cupti", "active"}, s);
  encode(Note{kFlushReplyNote, ""}, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  EXPECT_EQ(b.flush_replies(), 2u);
  EXPECT_EQ(b.profile().metadata.count(kFlushReplyNote), 0u);
  EXPECT_EQ(b.profile().metadata.at("cupti"), "active");
}

TEST(ChannelServer, FlushRequestReachesEveryConnection) {
  collector::ChannelServer server;
  collector::ProfileBuilder b("record");
  int fds[2];
  for (int& fd : fds) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, server.path().c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  server.accept_pending(b);
  ASSERT_EQ(server.connections(), 2u);
  EXPECT_EQ(server.request_flush(), 2u);
  for (int fd : fds) {
    char c = 0;
    EXPECT_EQ(::recv(fd, &c, 1, 0), 1);
    EXPECT_EQ(c, 'F');
    ::close(fd);
  }
}

// A process that connects, writes all its frames and exits before the collector accepted it
// (edo record's job often connects only in its exit handler): its connection waits in the
// backlog, and accept_pending() must take it before stop_listening() drops the backlog.
TEST(ChannelServer, ConnectionsWaitingAtStopAreAccepted) {
  collector::ChannelServer server;
  collector::ProfileBuilder b("record");
  const std::string bytes = sample::sample_stream();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, server.path().c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ::close(fd);  // gone before anyone accepted it
  server.accept_pending(b);
  server.stop_listening();
  while (server.poll_once(b, 0)) {
  }
  b.finish();
  EXPECT_EQ(b.profile().sessions.size(), 2u);
  EXPECT_EQ(server.connections(), 0u);
}

namespace {
std::string f32_values(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * 4);
}
}  // namespace

TEST(Collector, WeightSnapshotPartsAssembleHotRowsFirstAndANewSnapshotReplaces) {
  std::string s;
  Hello h;
  h.pid = 1;
  encode(h, s);
  encode(TableReg{5, "t", 0x1000, 100, 2, 0, 0, -1}, s);
  encode(ExtraBytes{5, "adam.exp_avg", 800}, s);
  encode(ExtraBytes{5, "grad", 800}, s);
  // Snapshot 1 in two parts: part 0 holds two hot rows and a sampled one, part 1 a hot row
  // and a sampled one (hot rows must still come first).
  encode(WeightRows{5, 1, 0, 2, 0, 2, 100, 97, 2, {9, 4, 50}, f32_values({1, 2, 3, 4, 5, 6})}, s);
  encode(WeightRows{5, 1, 1, 2, 0, 2, 100, 97, 1, {7, 60}, f32_values({7, 8, 9, 10})}, s);
  collector::ProfileBuilder b("record");
  const int st = b.open_stream("test");
  b.feed(st, s.data(), s.size());
  ASSERT_EQ(b.profile().weights.size(), 1u);
  {
    const auto& w = b.profile().weights[0];
    EXPECT_EQ(w.table, "t");
    EXPECT_EQ(w.rows, (std::vector<uint64_t>{9, 4, 7, 50, 60}));
    EXPECT_EQ(w.hot_count, 3u);
    EXPECT_EQ(w.values, f32_values({1, 2, 3, 4, 7, 8, 5, 6, 9, 10}));
    EXPECT_TRUE(w.consistent());
    EXPECT_DOUBLE_EQ(w.inclusion_weight(4), 97.0 / 2.0);
  }
  const auto& t = b.profile().tables[0];
  EXPECT_EQ(t.extra_by_kind.at("adam.exp_avg"), 800u);
  EXPECT_EQ(t.extra_by_kind.at("grad"), 800u);
  // A second snapshot replaces the first; parts that do not fit the table are reported and
  // skipped.
  std::string more;
  encode(WeightRows{5, 2, 0, 1, 0, 2, 100, 0, 1, {3}, f32_values({-1, -2})}, more);
  encode(WeightRows{5, 2, 0, 1, 0, 2, 100, 0, 1, {300}, f32_values({-1, -2})}, more);   // row 300 of 100
  encode(WeightRows{5, 2, 0, 1, 0, 3, 100, 0, 1, {3}, f32_values({-1, -2})}, more);     // wrong dim
  encode(WeightRows{5, 2, 0, 1, 0, 2, 100, 0, 1, {3}, f32_values({-1})}, more);         // short values
  encode(WeightRows{9, 2, 0, 1, 0, 2, 100, 0, 1, {3}, f32_values({-1, -2})}, more);     // unknown table
  const size_t issues_before = b.issues().size();
  b.feed(st, more.data(), more.size());
  EXPECT_EQ(b.issues().size(), issues_before + 4);
  ASSERT_EQ(b.profile().weights.size(), 1u);
  EXPECT_EQ(b.profile().weights[0].rows, std::vector<uint64_t>{3});
  EXPECT_EQ(b.profile().weights[0].values, f32_values({-1, -2}));
}

TEST(Collector, WeightSnapshotSavesAndLoads) {
  std::string s;
  Hello h;
  h.pid = 1;
  encode(h, s);
  encode(TableReg{0, "emb", 0x1000, 10, 2, 0, 0, -1}, s);
  encode(WeightRows{0, 1, 0, 1, 0, 2, 10, 0, 2, {1, 2}, f32_values({1, 2, 3, 4})}, s);
  encode(WeightRows{0, 2, 0, 1, 0, 2, 10, 0, 1, {8}, f32_values({5, 6})}, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  ASSERT_EQ(b.profile().weights.size(), 1u);
  EXPECT_EQ(b.profile().weights[0].rows, std::vector<uint64_t>{8});
  const std::string path = ::testing::TempDir() + "/collector-weights.edodb";
  db::ProfileStore store(path, db::ProfileStore::Mode::kCreate);
  store.save(b.finish());
  const auto w = db::load_weight_snapshots(store);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].values, f32_values({5, 6}));
}

// Run ids (issue 18 §3): files of several runs are refused, naming them; --run picks one and
// only its sessions are applied; files without a run id import as before, but not mixed.
#include "edo/collector/trace_runs.h"

namespace {
std::string session_of_run(const std::string& run, int64_t pid, uint64_t lookups) {
  Hello h;
  h.pid = pid;
  h.command = "job";
  h.run_id = run;
  if (run.empty()) h.protocol = 1;
  std::string out = encode(h);
  encode(TableReg{0, "emb", 0x1000, 100, 4, 0, 0, -1}, out);
  edo::stats::TableIngestor ing(100, edo::stats::StatsConfig{});
  std::vector<int64_t> idx(lookups, 3);
  ing.add(idx.data(), idx.size());
  encode(TableDelta{0, ing.take_delta().serialize()}, out);
  encode(Goodbye{}, out);
  return out;
}
}  // namespace

TEST(Collector, RunChoiceRefusesMixedRunsAndPicksOne) {
  using collector::choose_run;
  using collector::TraceFileRuns;
  const std::vector<TraceFileRuns> files = {
      {"run.edotrace", {"bbbb"}}, {"run.edotrace.11", {"aaaa"}}, {"run.edotrace.12", {"bbbb"}}};
  auto c = choose_run(files, std::nullopt);
  EXPECT_NE(c.error.find("come from 2 runs"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("run bbbb: run.edotrace, run.edotrace.12"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("run aaaa: run.edotrace.11"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("--run ID (ids found: bbbb, aaaa)"), std::string::npos) << c.error;
  EXPECT_EQ(c.error.find('\n'), std::string::npos);
  c = choose_run(files, std::string("bbbb"));
  EXPECT_TRUE(c.error.empty());
  EXPECT_EQ(c.files, (std::vector<std::string>{"run.edotrace", "run.edotrace.12"}));
  EXPECT_EQ(c.skipped, (std::vector<std::string>{"run.edotrace.11"}));
  c = choose_run(files, std::string("cccc"));
  EXPECT_EQ(c.error, "no trace file belongs to run cccc (runs found: bbbb, aaaa)");
  // Without run ids (older tracers): imported together, as before.
  c = choose_run({{"a", {""}}, {"a.1", {""}}}, std::nullopt);
  EXPECT_TRUE(c.error.empty());
  EXPECT_EQ(c.files.size(), 2u);
  // Mixed with files that have one: refused.
  c = choose_run({{"a", {"bbbb"}}, {"a.1", {""}}}, std::nullopt);
  EXPECT_NE(c.error.find("run (no run id): a.1"), std::string::npos) << c.error;
}

TEST(Collector, KeepOnlyRunSkipsOtherRunsSessionsInsideAFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("edo_runs_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "w.edotrace").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    // A worker file appended to by two runs (a pid reused), then a file of the old format.
    const std::string bytes = session_of_run("aaaa", 11, 5) + session_of_run("bbbb", 11, 7);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  EXPECT_EQ(collector::scan_trace_runs(path).runs, (std::set<std::string>{"aaaa", "bbbb"}));
  collector::ProfileBuilder b("import");
  b.keep_only_run("bbbb");
  const std::string bytes = session_of_run("aaaa", 11, 5) + session_of_run("bbbb", 11, 7) + session_of_run("", 12, 9);
  build(b, bytes);
  const model::Profile& p = b.profile();
  ASSERT_EQ(p.sessions.size(), 1u);
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_EQ(p.tables[0].aggregate.lookups(), 7u);
  EXPECT_EQ(b.skipped_sessions(), 2u);
  EXPECT_EQ(p.metadata.at("run_id"), "bbbb");
  std::filesystem::remove_all(dir);
}

// Issue 18 §7: the summary counted registrations ("6 table(s)" where `edo report` lists 5). A
// root and two forked workers registering the same two tables, tied, are 2 tables, 1 tie.
TEST(Collector, SummaryCountsTablesAsTheReportListsThem) {
  std::string bytes;
  for (int64_t pid : {100, 101, 102}) {
    Hello h;
    h.pid = pid;
    h.ppid = pid == 100 ? 1 : 100;
    h.command = "python3 train.py";
    h.run_id = "abcd";
    encode(h, bytes);
    encode(TableReg{0, "emb", 0x1000, 100, 4, 0, 0, -1}, bytes);
    encode(TableReg{1, "lm_head", 0x1000, 100, 4, 0, 0, -1}, bytes);
    encode(Tie{0, 1}, bytes);
    edo::stats::TableIngestor ing(100, edo::stats::StatsConfig{});
    std::vector<int64_t> idx(10, 3);
    ing.add(idx.data(), idx.size());
    encode(TableDelta{0, ing.take_delta().serialize()}, bytes);
    encode(Goodbye{}, bytes);
  }
  collector::ProfileBuilder b("import");
  build(b, bytes);
  const auto lines = collector::summary_lines(b.profile());
  EXPECT_EQ(lines[0],
            "3 session(s), 2 table(s) (6 registrations: a table several processes registered counts once), 30 lookups, "
            "1 tie(s)");
}

// Issue 29: the PyTorch hooks' training facts become the model's fields, not metadata. The
// optimizer note may come before the table's registration (pending until it arrives) or after
// it; a later one replaces the earlier; malformed values are skipped with one issue per key.
TEST(Collector, TrainingNotesFillLossesOptimizerAndDenseUse) {
  std::string s;
  Hello h;
  h.pid = 7;
  encode(h, s);
  encode(Note{"pytorch.optimizer", R"({"table": "emb", "kind": "sgd", "lr": 0.5})"}, s);
  encode(Note{"pytorch.optimizer", R"({"table": "emb", "kind": "adam", "lr": 0.001, "eps": 1e-8, "betas": [0.9, 0.999],)"
                                   R"( "weight_decay": 0.01, "maximize": true})"},
         s);
  encode(TableReg{0, "emb", 0x1000, 100, 4, 0, 0, -1}, s);
  encode(TableReg{1, "head", 0x9000, 100, 4, 0, 0, -1}, s);
  encode(Note{"pytorch.optimizer", R"({"table": "head", "kind": "adagrad", "lr": 0.01, "initial_accumulator_value": 0.1})"}, s);
  encode(Note{"pytorch.dense_use", R"({"table": "head", "why": "the gradient reached\n100 of 100 rows"})"}, s);
  encode(Note{"pytorch.loss", "1:0.75 2:0.5"}, s);
  encode(Note{"pytorch.loss", "3:nan 4:inf 5:-inf"}, s);
  encode(Note{"pytorch.loss", "6:0.25 x:1 7"}, s);             // two bad pairs, one good
  encode(Note{"pytorch.loss", "oops"}, s);                     // counted in the same issue
  encode(Note{"pytorch.optimizer", "{not json"}, s);
  encode(Note{"pytorch.optimizer", R"({"table": "emb", "lr": "fast"})"}, s);
  encode(Note{"pytorch.dense_use", R"({"why": "no table"})"}, s);
  encode(Note{"pytorch.plan_applied", R"({"plan": "p.json", "tables": {}})"}, s);
  collector::ProfileBuilder b("record");
  build(b, s);
  const model::Profile& p = b.profile();
  ASSERT_EQ(p.sessions.size(), 1u);
  const auto& l = p.sessions[0].losses;
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[0].step, 1u);
  EXPECT_DOUBLE_EQ(l[0].loss, 0.75);
  EXPECT_TRUE(std::isnan(l[2].loss));
  EXPECT_EQ(l[3].loss, std::numeric_limits<double>::infinity());
  EXPECT_EQ(l[4].loss, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(l[5].step, 6u);
  ASSERT_EQ(p.tables.size(), 2u);
  ASSERT_TRUE(p.tables[0].optimizer_params.has_value());  // the later note before registration won
  EXPECT_EQ(p.tables[0].optimizer_params->kind, "adam");
  EXPECT_DOUBLE_EQ(p.tables[0].optimizer_params->lr, 0.001);
  EXPECT_DOUBLE_EQ(p.tables[0].optimizer_params->beta2, 0.999);
  EXPECT_DOUBLE_EQ(p.tables[0].optimizer_params->weight_decay, 0.01);
  EXPECT_TRUE(p.tables[0].optimizer_params->maximize);
  EXPECT_EQ(p.tables[0].dense_use, "");
  ASSERT_TRUE(p.tables[1].optimizer_params.has_value());
  EXPECT_EQ(p.tables[1].optimizer_params->kind, "adagrad");
  EXPECT_DOUBLE_EQ(p.tables[1].optimizer_params->initial_accumulator_value, 0.1);
  EXPECT_DOUBLE_EQ(p.tables[1].optimizer_params->beta1, 0.0);
  EXPECT_EQ(p.tables[1].dense_use, "the gradient reached 100 of 100 rows");
  for (const auto& [k, v] : p.metadata) {
    EXPECT_EQ(k.find("pytorch.loss"), std::string::npos) << k;
    EXPECT_EQ(k.find("pytorch.optimizer"), std::string::npos) << k;
    EXPECT_EQ(k.find("pytorch.dense_use"), std::string::npos) << k;
  }
  EXPECT_EQ(p.metadata.count("session.1.pytorch.plan_applied"), 1u);
  // One issue per key, the count of its malformed notes in it.
  ASSERT_EQ(b.issues().size(), 3u);
  EXPECT_NE(b.issues()[0].message.find("pytorch.loss"), std::string::npos);
  EXPECT_NE(b.issues()[0].message.find("2 such notes"), std::string::npos) << b.issues()[0].message;
  EXPECT_NE(b.issues()[1].message.find("pytorch.optimizer"), std::string::npos);
  EXPECT_NE(b.issues()[1].message.find("2 such notes"), std::string::npos) << b.issues()[1].message;
  EXPECT_NE(b.issues()[2].message.find("no \"table\""), std::string::npos) << b.issues()[2].message;
}

// A fact noted in one flush for a table registered in a later flush (another feed) still lands.
TEST(Collector, OptimizerNoteBeforeTheRegistrationInAnEarlierFlush) {
  std::string first, second;
  encode(Hello{}, first);
  encode(Note{"pytorch.dense_use", R"({"table": "t", "why": "F.linear"})"}, first);
  encode(TableReg{3, "t", 0x1000, 10, 4, 0, 0, -1}, second);
  collector::ProfileBuilder b("record");
  const int st = b.open_stream("test");
  b.feed(st, first.data(), first.size());
  EXPECT_TRUE(b.profile().tables.empty());
  b.feed(st, second.data(), second.size());
  b.close_stream(st);
  ASSERT_EQ(b.profile().tables.size(), 1u);
  EXPECT_EQ(b.profile().tables[0].dense_use, "F.linear");
  EXPECT_FALSE(b.profile().tables[0].optimizer_params.has_value());
}

// Lookups of a table that got no statistics are lost without a dropped event: the line must not
// read "dropped events: 0 (raise ...)" as if the advice were for nothing.
TEST(Collector, SummarySaysDataWasLostWhenNoEventWasDropped) {
  model::Profile p;
  model::Session s;
  s.drops["memory_bound_tables"] = 1;
  s.drops["memory_bound_lookups"] = 4096;
  p.sessions.push_back(s);
  const auto lines = collector::summary_lines(p);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[2], "dropped events: 0, but data was lost (below) (raise EDO_MAX_MEMORY_MB)") << lines[2];
  EXPECT_NE(lines[3].find("memory_bound_lookups: 4096"), std::string::npos) << lines[3];
}
