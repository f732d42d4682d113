// The two-level replay of the SSD tier (ssd_replay.h): hand-built streams against answers worked
// out by hand below, and random streams against a brute-force simulation written the plainest
// way (each level a vector, most recent first, searched from the front) of the same rules:
// an L1 miss is read from L2 or else from the SSD and put into L2; the row L1 displaces is
// written back into L2.
#include "ssd_replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

namespace edo::tuner {
namespace {

ReplayStream stream_of(std::vector<uint64_t> rows, size_t split) {
  ReplayStream s;
  s.rows = std::move(rows);
  s.split = split;
  for (size_t i = 0; i < s.rows.size(); ++i) s.batch.push_back(i);
  return s;
}

// One level as a vector, most recent first.
struct Level {
  size_t slots;
  std::vector<uint64_t> rows;
  bool touch(uint64_t r) {
    auto it = std::find(rows.begin(), rows.end(), r);
    if (it == rows.end()) return false;
    rows.erase(it);
    rows.insert(rows.begin(), r);
    return true;
  }
  // Inserts r (not held); returns true and the displaced row when full.
  bool insert(uint64_t r, uint64_t& out) {
    rows.insert(rows.begin(), r);
    if (rows.size() <= slots) return false;
    out = rows.back();
    rows.pop_back();
    return true;
  }
};

TwoLevelCount brute_force(const ReplayStream& s, size_t l1_slots, size_t l2_slots) {
  Level l1{l1_slots, {}}, l2{l2_slots, {}};
  TwoLevelCount n;
  std::vector<uint64_t> dirty;  // rows L2 holds that L1 wrote back into it
  auto drop = [&](uint64_t r, uint64_t c) {  // L2 displaced r: a dirty row is written to the SSD
    auto it = std::find(dirty.begin(), dirty.end(), r);
    if (it == dirty.end()) return;
    dirty.erase(it);
    n.ssd_writes += c;
  };
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const uint64_t r = s.rows[i];
    const uint64_t c = i >= s.split ? 1 : 0;
    n.refs += c;
    if (l1_slots && l1.touch(r)) {
      n.device_hits += c;
      continue;
    }
    uint64_t out = 0;
    if (l2_slots && l2.touch(r)) {
      n.host_hits += c;
    } else {
      n.ssd_reads += c;
      if (l2_slots && l2.insert(r, out)) drop(out, c);
    }
    if (!l1_slots) continue;
    if (l1.insert(r, out)) {
      n.writebacks += c;
      if (!l2_slots) n.ssd_writes += c;
      uint64_t dropped = 0;
      if (l2_slots && !l2.touch(out) && l2.insert(out, dropped)) drop(dropped, c);
      if (l2_slots && std::find(dirty.begin(), dirty.end(), out) == dirty.end()) dirty.push_back(out);
    }
  }
  return n;
}

void expect_counts(const TwoLevelCount& n, uint64_t refs, uint64_t device, uint64_t host, uint64_t ssd, uint64_t writebacks,
                   std::optional<uint64_t> ssd_writes = std::nullopt) {
  if (ssd_writes) EXPECT_EQ(n.ssd_writes, *ssd_writes);
  EXPECT_EQ(n.refs, refs);
  EXPECT_EQ(n.device_hits, device);
  EXPECT_EQ(n.host_hits, host);
  EXPECT_EQ(n.ssd_reads, ssd);
  EXPECT_EQ(n.writebacks, writebacks);
}

TEST(TwoLevelReplay, AnL1EvictionIsWrittenBackAndServedByL2) {
  // L1 of 1 row, L2 of 1 row; rows 1 2 1 2, all counted.
  //  1: misses both, read from the SSD; L2 = {1}; L1 = {1}.
  //  2: misses both, SSD; L2 = {2} (1 leaves); L1 = {2}, 1 displaced and written back: L2 = {1}.
  //  1: misses L1, found in L2 (host hit); L1 = {1}, 2 written back: L2 = {2}.
  //  2: host hit likewise.
  // Trained, the written-back rows are dirty: the 2nd reference's L2 evictions drop clean rows
  // (1 read from the SSD, then 2 likewise); the 3rd's write-back of 2 displaces the dirty 1, the
  // 4th's of 1 the dirty 2: 2 SSD writes.
  expect_counts(replay_two_level(stream_of({1, 2, 1, 2}, 0), 1, 1), 4, 0, 2, 2, 3, 2);
}

TEST(TwoLevelReplay, L2IsNeitherInclusiveNorExclusive) {
  // L1 of 2, L2 of 2; rows 1 2 3 1 2 | 3, counted from the 6th reference.
  //  1, 2: SSD reads; L2 = {2, 1}; L1 = {2, 1}.
  //  3: SSD read, L2 = {3, 2}; L1 = {3, 2}, 1 written back: L2 = {1, 3}.
  //  1: host hit (L2 = {1, 3}); L1 = {1, 3}, 2 written back: L2 = {2, 1}.
  //  2: host hit; L1 = {2, 1}, 3 written back: L2 = {3, 2}.
  //  3 (counted): host hit, a row L1 no longer holds: 1 host hit, 1 write-back.
  expect_counts(replay_two_level(stream_of({1, 2, 3, 1, 2, 3}, 5), 2, 2), 1, 0, 1, 0, 1);
  // Without L2 every L1 miss is an SSD read; without L1 every reference goes to L2.
  // (with no L2 each of the 4 write-backs is an SSD write)
  expect_counts(replay_two_level(stream_of({1, 2, 3, 1, 2, 3}, 0), 2, 0), 6, 0, 0, 6, 4, 4);
  expect_counts(replay_two_level(stream_of({1, 1, 2, 1}, 0), 0, 2), 4, 0, 2, 2, 0);
  // Repeats in L1: 1 1 1 with one row of L1: one SSD read, two device hits.
  expect_counts(replay_two_level(stream_of({1, 1, 1}, 0), 1, 4), 3, 2, 0, 1, 0);
}

TEST(TwoLevelReplay, MatchesABruteForceSimulationOnRandomStreams) {
  std::mt19937_64 rng(35);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t distinct = 1 + rng() % 40;
    std::vector<uint64_t> rows(1 + rng() % 300);
    // Skewed: half the references to the first few rows.
    for (auto& r : rows) r = (rng() % 2) ? rng() % std::max<uint64_t>(1, distinct / 8) : rng() % distinct;
    const ReplayStream s = stream_of(rows, rng() % rows.size());
    const size_t l1 = rng() % 12, l2 = rng() % 30;
    const TwoLevelCount got = replay_two_level(s, l1, l2), want = brute_force(s, l1, l2);
    expect_counts(got, want.refs, want.device_hits, want.host_hits, want.ssd_reads, want.writebacks, want.ssd_writes);
    EXPECT_EQ(got.device_hits + got.host_hits + got.ssd_reads, got.refs);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "trial " << trial << " L1 " << l1 << " L2 " << l2;
      break;
    }
  }
}

}  // namespace
}  // namespace edo::tuner
