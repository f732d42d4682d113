// Profile totals on values a damaged or hostile database can hold (found by the db_edit
// fuzz target): they saturate instead of overflowing.
#include <gtest/gtest.h>

#include <cstdint>

#include "edo/model/processes.h"
#include "edo/model/profile.h"

using edo::model::MemoryEvent;
using edo::model::Profile;

TEST(ProfileTotals, PeakOfHugeAllocationsSaturates) {
  Profile p;
  p.memory_events.push_back(MemoryEvent{1, 10, INT64_MAX, 0x1000, 0, 0, "cudaMalloc", ""});
  p.memory_events.push_back(MemoryEvent{1, 20, INT64_MAX, 0x2000, 0, 0, "cudaMalloc", ""});
  EXPECT_EQ(p.peak_bytes(), INT64_MAX);
  p.memory_events.push_back(MemoryEvent{1, 5, INT64_MIN, 0x3000, 0, 0, "cudaFree", ""});
  p.memory_events.push_back(MemoryEvent{1, 6, INT64_MIN, 0x3000, 0, 0, "cudaFree", ""});
  EXPECT_GE(p.peak_bytes(), 0);
}

TEST(ProfileTotals, TableBytesAndDropsSaturate) {
  Profile p;
  for (int i = 0; i < 3; ++i) {
    edo::model::Table t;
    t.session_id = i + 1;
    t.name = "t" + std::to_string(i);
    t.weight_bytes = UINT64_MAX / 2;
    t.optimizer_bytes = UINT64_MAX / 2;
    t.grad_bytes = UINT64_MAX / 2;
    p.tables.push_back(t);
    edo::model::Session s;
    s.id = i + 1;
    s.pid = 100 + i;
    s.parent_pid = 1;
    s.dropped_events = UINT64_MAX - 1;
    p.sessions.push_back(s);
  }
  EXPECT_EQ(p.table_memory().total_bytes(), UINT64_MAX);
  EXPECT_EQ(p.table_memory().weight_bytes, UINT64_MAX);
  EXPECT_EQ(p.dropped_events(), UINT64_MAX);
  EXPECT_EQ(p.peak_bytes(), INT64_MAX);  // no timeline: the table bytes, capped
}

// db_edit fuzz target, regress-job-start-int64-min: a root process starting at INT64_MIN (or
// running INT64_MAX ns) overflowed the job's duration (UBSan: signed overflow).
TEST(ProfileTotals, JobTimesFromHostileValuesSaturate) {
  Profile p;
  p.metadata[edo::model::kJobRootPid] = "100";
  edo::model::Session s;
  s.id = 1;
  s.pid = 100;
  s.parent_pid = 99;
  s.start_unix_ns = INT64_MIN;
  s.duration_ns = 5;
  p.sessions.push_back(s);
  EXPECT_EQ(edo::model::job_view(p).duration_ns, INT64_MAX);
  p.sessions[0].start_unix_ns = 10;
  p.sessions[0].duration_ns = INT64_MAX;
  EXPECT_EQ(edo::model::job_view(p).duration_ns, INT64_MAX - 10);  // the end saturated at INT64_MAX
}
