// Processes of one recording: the job's root, ranks, forked workers, and tables that forked
// workers inherited (one table: one row, lookups summed, bytes counted once).
#include "edo/model/processes.h"

#include <gtest/gtest.h>

#include "edo/model/profile_summary.h"

namespace edo::model {
namespace {

Session session(int64_t id, int64_t pid, int64_t parent_pid, const std::string& command, int64_t start) {
  Session s;
  s.id = id;
  s.pid = pid;
  s.parent_pid = parent_pid;
  s.command = command;
  s.host = "box";
  s.start_unix_ns = start;
  s.source = "record";
  return s;
}

// `reads` empty: a table the process holds but never read (no counts were sent).
Table table(int64_t session_id, const std::string& name, uint64_t base, uint64_t rows, std::vector<int64_t> reads) {
  Table t;
  t.session_id = session_id;
  t.name = name;
  t.rows = rows;
  t.dim = 16;
  t.dtype = "fp32";
  t.device = "host";
  t.base_address = base;
  t.weight_bytes = rows * 16 * 4;
  if (!reads.empty()) {
    stats::TableIngestor ing(rows, stats::StatsConfig{});
    ing.add(reads.data(), reads.size());
    ing.close_window();
    t.aggregate = ing.take_delta();
  }
  return t;
}

// The DataLoader case of issue 14 (item 3): the main process reads "user", then forks two
// workers that inherit it (one never reads it, one does) and read a Dataset table each.
Profile dataloader_profile() {
  Profile p;
  p.metadata[kJobRootPid] = "100";
  p.sessions.push_back(session(1, 101, 100, "python3 train.py", 20));  // workers connect first
  p.sessions.push_back(session(2, 102, 100, "python3 train.py", 21));
  p.sessions.push_back(session(3, 100, 99, "python3 train.py", 10));
  p.sessions[2].exit_code = 0;
  p.sessions[2].duration_ns = 5'000'000'000;
  p.tables.push_back(table(1, "user", 0x1000, 500, {}));             // inherited, never read
  p.tables.push_back(table(1, "dataset.emb", 0x9000, 1000, {1, 2}));
  p.tables.push_back(table(2, "user", 0x1000, 500, {7, 7, 7}));      // inherited and read
  p.tables.push_back(table(2, "dataset.emb", 0x9000, 1000, {3}));
  p.tables.push_back(table(3, "user", 0x1000, 500, {1, 2, 3, 4}));
  return p;
}

// Defect (issue 14, item 3): a phantom 0-lookup "user" row, a "user (session 3)" row, and the
// inherited tables counted once per worker in the totals and the peak.
TEST(InheritedTables, OneRowLookupsSummedBytesCountedOnce) {
  Profile p = dataloader_profile();
  const auto views = table_views(p);
  ASSERT_EQ(views.size(), 2u);
  const TableView* user = views[0].name == "user" ? &views[0] : &views[1];
  const TableView* ds = views[0].name == "user" ? &views[1] : &views[0];
  EXPECT_EQ(user->name, "user");
  EXPECT_EQ(user->summary.lookups, 7u);
  EXPECT_EQ(user->aggregate.count(7), 3u);
  EXPECT_EQ(user->sessions, 3);
  EXPECT_EQ(ds->name, "dataset.emb");
  EXPECT_EQ(ds->summary.lookups, 3u);
  const uint64_t one_copy = 500 * 16 * 4 + 1000 * 16 * 4;
  EXPECT_EQ(p.table_memory().weight_bytes, one_copy);
  EXPECT_EQ(p.peak_bytes(), static_cast<int64_t>(one_copy));
  const auto same = same_table_as(p);
  EXPECT_EQ(same, (std::vector<size_t>{0, 1, 0, 1, 0}));
}

// Processes started by exec have their own memory: the same name at the same address (ASLR
// off, identical programs) is not the same table; neither are the tables of two ranks.
TEST(InheritedTables, ExecedChildrenAndRanksKeepTheirOwnMemory) {
  Profile p;
  p.sessions.push_back(session(1, 100, 99, "python3 launch.py", 10));
  p.sessions.push_back(session(2, 101, 100, "python3 rank.py", 20));
  p.sessions.push_back(session(3, 102, 100, "python3 rank.py", 21));
  p.sessions[1].rank = 0;
  p.sessions[2].rank = 1;
  p.tables.push_back(table(2, "emb", 0x1000, 500, {1}));
  p.tables.push_back(table(3, "emb", 0x1000, 500, {2}));
  EXPECT_EQ(same_table_as(p), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(p.table_memory().weight_bytes, 2u * 500 * 16 * 4);
  // Siblings forked from one recorded process with the same command share it...
  p.sessions[1].rank.reset();
  p.sessions[2].rank.reset();
  p.sessions[0].command = "python3 rank.py";
  EXPECT_EQ(same_table_as(p), (std::vector<size_t>{0, 0}));
  // ...not when the parent is another program (they were exec'ed).
  p.sessions[0].command = "python3 launch.py";
  EXPECT_EQ(same_table_as(p), (std::vector<size_t>{0, 1}));
  // Another host is other memory.
  p.sessions[0].command = "python3 rank.py";
  p.sessions[2].host = "other";
  EXPECT_EQ(same_table_as(p), (std::vector<size_t>{0, 1}));
}

// Defect (issue 14, item 4): the header was the first process that connected.
TEST(JobView, TheRootIsTheProcessEdoRecordStarted) {
  Profile p = dataloader_profile();
  const JobView job = job_view(p);
  ASSERT_EQ(job.root, 2);
  EXPECT_EQ(*job.pid, 100);
  EXPECT_EQ(*job.exit_code, 0);
  EXPECT_EQ(job.duration_ns, 5'000'000'000);
  EXPECT_EQ(job.command, "python3 train.py");
  EXPECT_EQ(job.roles, (std::vector<Role>{Role::kWorker, Role::kWorker, Role::kRoot}));
  EXPECT_TRUE(job.ranks.empty());
  // edo record's own figures win: the command as typed, the job's wall time.
  p.metadata[kJobCommand] = "python train.py";
  p.metadata[kJobDurationNs] = "6000000000";
  EXPECT_EQ(job_view(p).command, "python train.py");
  EXPECT_EQ(job_view(p).duration_ns, 6'000'000'000);
  // Without edo record's note (edo import): the earliest process whose parent is not recorded.
  p.metadata.clear();
  EXPECT_EQ(job_view(p).root, 2);
}

TEST(JobView, AnExecedRootIsOneJobWithTwoImages) {
  Profile p;
  p.metadata[kJobRootPid] = "100";
  p.sessions.push_back(session(1, 100, 99, "sh run.sh", 10));
  p.sessions.push_back(session(2, 100, 99, "python3 train.py", 30));
  p.sessions[0].duration_ns = 20;
  p.sessions[1].duration_ns = 70;
  p.sessions[1].exit_code = 3;
  const JobView job = job_view(p);
  EXPECT_EQ(job.root, 1);  // the last image holds the exit code
  EXPECT_EQ(*job.exit_code, 3);
  EXPECT_EQ(job.command, "sh run.sh");
  EXPECT_EQ(job.duration_ns, 90);  // from the first image's start to the last one's end
  EXPECT_EQ(job.count(Role::kRoot), 2u);
}

TEST(JobView, RanksAreTheFirstProcessOfEachRank) {
  Profile p;
  p.metadata[kJobRootPid] = "100";
  p.sessions.push_back(session(1, 111, 101, "python3 train.py", 40));  // a worker of rank 1
  p.sessions.push_back(session(2, 101, 100, "python3 train.py", 20));
  p.sessions.push_back(session(3, 102, 100, "python3 train.py", 21));
  p.sessions.push_back(session(4, 100, 99, "torchrun train.py", 10));
  p.sessions[0].rank = 1;
  p.sessions[1].rank = 1;
  p.sessions[2].rank = 0;
  const JobView job = job_view(p);
  EXPECT_EQ(job.root, 3);
  EXPECT_EQ(job.ranks, (std::vector<size_t>{2, 1}));  // rank 0, then rank 1
  EXPECT_EQ(job.roles, (std::vector<Role>{Role::kWorker, Role::kRank, Role::kRank, Role::kRoot}));
}

}  // namespace
}  // namespace edo::model
