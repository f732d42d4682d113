// edo merge (issue 22): one recording per node merged into one recording of the job. Counts
// add up exactly, sketches merge, every rank stays its own session, drop counters sum, clocks
// align, recordings of different jobs or the same rank twice are refused, and any grouping of
// merges gives the same database.
#include "edo/db/merge_files.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"
#include "edo/model/processes.h"
#include "edo/model/profile_summary.h"
#include "edo/model/rank_view.h"
#include "recordings.h"

namespace edo::db {
namespace {

using namespace edo::model;
using testing::temp_path;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

struct RankSpec {
  int64_t rank;
  uint64_t seed;
};

// One node's recording as `edo record` writes it: the launcher (no rank) and its ranks, each
// reading an exact-count table and a sketched one, with a timeline, drops and notes.
Profile node_recording(const std::string& host, int64_t group_rank, std::vector<RankSpec> ranks, int64_t start,
                       const std::string& master = "10.0.0.1:29500", int64_t world = 4) {
  Profile p;
  Session launcher;
  launcher.id = 1;
  launcher.command = "python3 launch.py";
  launcher.host = host;
  launcher.pid = 100;
  launcher.parent_pid = 1;
  launcher.start_unix_ns = start;
  launcher.duration_ns = 5'000'000'000;
  launcher.source = "record";
  p.sessions.push_back(launcher);
  stats::StatsConfig exact;
  stats::StatsConfig sketch;
  sketch.exact_rows_limit = 1000;  // the 5000-row table is sketched
  sketch.cms_width = 1024;
  sketch.top_k = 64;
  sketch.hll_precision = 10;
  for (const auto& r : ranks) {
    Session s = launcher;
    s.id = int64_t(p.sessions.size() + 1);
    s.command = "python3 train.py";
    s.pid = 200 + r.rank;
    s.parent_pid = 100;
    s.rank = r.rank;
    s.local_rank = r.rank % 2;
    s.start_unix_ns = start + 1'000'000 * (r.rank + 1);
    s.steps = 10 + uint64_t(r.rank);
    s.drops = {{"batches", uint64_t(r.rank)}, {"indices", 10 * uint64_t(r.rank)}};
    s.dropped_events = uint64_t(r.rank);
    s.identity.master = master;
    s.identity.world_size = world;
    s.identity.group_rank = group_rank;
    s.identity.local_world_size = 2;
    s.losses = {{1, 1.0 + double(r.rank)}, {2, 0.5 + double(r.rank)}};  // rank r's curve starts at 1 + r
    p.sessions.push_back(s);
    for (auto [name, rows, cfg] : {std::tuple{"emb.small", uint64_t(200), exact}, std::tuple{"emb.big", uint64_t(5000), sketch}}) {
      Table t;
      t.session_id = s.id;
      t.name = name;
      t.rows = rows;
      t.dim = 8;
      t.dtype = "fp32";
      t.device = "cuda";
      t.base_address = 0x7f0000000000ull + rows;
      t.weight_bytes = rows * 8 * 4;
      stats::TableIngestor ing(rows, cfg);
      stats::ZipfGenerator gen(rows, 1.0, r.seed + rows);
      std::vector<int64_t> idx(3000 + 100 * size_t(r.rank));
      gen.fill(idx.data(), idx.size());
      ing.add(idx.data(), idx.size());
      ing.close_window();
      t.aggregate = ing.take_delta();
      if (rows == 200) t.optimizer_params = OptimizerParams{"adagrad", 0.01 * double(r.rank + 1), 1e-10, 0, 0, 0, 0, 0, false};
      else t.dense_use = "read whole on rank " + std::to_string(r.rank);
      p.tables.push_back(std::move(t));
    }
    p.memory_events.push_back({s.id, 10, 6400, 0x1000, 0, 0, "cudaMalloc", "emb.small"});
    p.memory_events.push_back({s.id, 20, 160000, 0x9000, 0, 0, "cudaMalloc", "emb.big"});
    p.kernels.push_back({s.id, "embedding_kernel", 5, 1000, {"emb.small"}, {{"emb.small", 5, 1000}}});
    p.ranges.push_back({s.id, "forward", 10, 5000, 30, 0});
    p.metadata["session." + std::to_string(s.id) + ".edo.device_bytes"] = std::to_string(1000 * (r.rank + 1));
  }
  p.metadata["edo_version"] = "test";
  p.metadata["run_id"] = "run-of-" + host;
  p.metadata["job.duration_ns"] = std::to_string(5'000'000'000 + group_rank);
  return p;
}

std::string save(const std::string& name, Profile p) {
  const std::string path = temp_path(name);
  std::filesystem::remove(path);
  ProfileStore(path, ProfileStore::Mode::kCreate).save(p, true);
  return path;
}

std::string merged(const std::vector<std::string>& in, const std::string& name, MergeOptions o = {}) {
  const std::string out = temp_path(name);
  std::filesystem::remove(out);
  merge_files(in, out, o);
  return out;
}

// Every row of every table except the migration timestamps, sorted: the database's content.
std::string content(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  SQLite::Statement names(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'schema_migrations' ORDER BY name");
  std::string out;
  while (names.executeStep()) {
    const std::string table = names.getColumn(0).getString();
    SQLite::Statement q(db, "SELECT * FROM \"" + table + "\"");
    std::vector<std::string> rows;
    while (q.executeStep()) {
      std::string row;
      for (int c = 0; c < q.getColumnCount(); ++c) {
        const auto col = q.getColumn(c);
        row += col.isNull() ? "NULL" : col.isBlob() ? std::string(static_cast<const char*>(col.getBlob()), size_t(col.getBytes()))
                                                    : col.getString();
        row += '\x1f';
      }
      rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end());
    out += "## " + table + "\n";
    for (const auto& r : rows) out += r + "\n";
  }
  return out;
}

const TableView& view(const std::vector<TableView>& vs, const std::string& name) {
  auto it = std::find_if(vs.begin(), vs.end(), [&](const TableView& v) { return v.name == name; });
  if (it == vs.end()) throw std::runtime_error("no table " + name);
  return *it;
}

TEST(Merge, CountsAddUpExactlySketchesMergeEachRankStaysItsOwnSession) {
  const Profile n0 = node_recording("node0", 0, {{0, 1}, {1, 2}}, kT0);
  const Profile n1 = node_recording("node1", 1, {{2, 3}, {3, 4}}, kT0 + 50'000'000);
  const std::string a = save("m-node0.edodb", n0), b = save("m-node1.edodb", n1);
  const std::string out = merged({a, b}, "m-job.edodb");
  const Profile job = ProfileStore(out, ProfileStore::Mode::kReadOnly).load();

  ASSERT_EQ(job.sessions.size(), 6u);  // two launchers, four ranks
  std::set<int64_t> ranks;
  for (const auto& s : job.sessions)
    if (s.rank) {
      ranks.insert(*s.rank);
      EXPECT_EQ(s.identity.master, "10.0.0.1:29500");
      EXPECT_EQ(s.identity.world_size, 4);
      EXPECT_EQ(s.identity.group_rank, *s.rank / 2);
      EXPECT_EQ(s.host, *s.rank < 2 ? "node0" : "node1");
    }
  EXPECT_EQ(ranks, (std::set<int64_t>{0, 1, 2, 3}));

  // Every rank's own tables are kept, with its own counts.
  std::map<std::pair<int64_t, std::string>, const Table*> by_rank;
  for (const auto& t : job.tables)
    for (const auto& s : job.sessions)
      if (s.id == t.session_id && s.rank) by_rank[{*s.rank, t.name}] = &t;
  ASSERT_EQ(by_rank.size(), 8u);
  for (const Profile* node : {&n0, &n1})
    for (const auto& t : node->tables) {
      const int64_t rank = *node->sessions[size_t(t.session_id - 1)].rank;
      const Table* m = by_rank.at({rank, t.name});
      EXPECT_EQ(m->aggregate.lookups(), t.aggregate.lookups());
      EXPECT_EQ(m->aggregate.serialize(), t.aggregate.serialize()) << "rank " << rank << " " << t.name;
    }

  // The job's view adds them: exact counts row by row, sketches merged (count-min added,
  // HyperLogLog united), exactly as merging the four aggregates by hand.
  const auto views = table_views(job);
  for (const std::string name : {"emb.small", "emb.big"}) {
    stats::TableAggregate want;
    bool first = true;
    for (const Profile* node : {&n0, &n1})
      for (const auto& t : node->tables)
        if (t.name == name) {
          if (first) want = t.aggregate;
          else ASSERT_TRUE(want.merge(t.aggregate));
          first = false;
        }
    const TableView& v = view(views, name);
    EXPECT_EQ(v.aggregate.lookups(), want.lookups());
    EXPECT_EQ(v.aggregate.unique_rows(), want.unique_rows());
    EXPECT_EQ(v.aggregate.serialize(), want.serialize());
    EXPECT_EQ(v.ranks, (std::set<int64_t>{0, 1, 2, 3}));
  }
  EXPECT_EQ(view(views, "emb.big").aggregate.mode(), stats::CountMode::kSketch);
  for (uint64_t row = 0; row < 200; ++row) {
    uint64_t sum = 0;
    for (const Profile* node : {&n0, &n1})
      for (const auto& t : node->tables)
        if (t.name == "emb.small") sum += t.aggregate.count(row);
    ASSERT_EQ(view(views, "emb.small").aggregate.count(row), sum) << "row " << row;
  }

  // Drop counters sum; the per-process notes follow their process.
  EXPECT_EQ(job.drops().at("batches"), 0u + 1 + 2 + 3);
  EXPECT_EQ(job.drops().at("indices"), 0u + 10 + 20 + 30);
  EXPECT_EQ(job.dropped_events(), n0.dropped_events() + n1.dropped_events());
  EXPECT_EQ(job.edo_device_bytes(), n0.edo_device_bytes() + n1.edo_device_bytes());
  EXPECT_EQ(job.memory_events.size(), n0.memory_events.size() + n1.memory_events.size());
  // Facts on which the nodes disagree keep every node's value; those they share stay as they are.
  EXPECT_EQ(job.metadata.at("edo_version"), "test");
  EXPECT_FALSE(job.metadata.count("run_id"));
  EXPECT_EQ(job.metadata.at("merge.values.run_id"), "=run-of-node0\n=run-of-node1");
  EXPECT_EQ(job.metadata.at("job.duration_ns"), "5000000001");
}

TEST(Merge, AnyGroupingGivesTheSameDatabase) {
  const std::string a = save("g-a.edodb", node_recording("node0", 0, {{0, 1}, {1, 2}}, kT0));
  const std::string b = save("g-b.edodb", node_recording("node1", 1, {{2, 3}, {3, 4}}, kT0 + 7'000'000'000));
  const std::string c = save("g-c.edodb", node_recording("node2", 2, {{4, 5}, {5, 6}}, kT0 - 3'000'000'000));
  for (const auto align : {ClockAlign::kWall, ClockAlign::kStart}) {
    MergeOptions o;
    o.align = align;
    const std::string ab = merged({a, b}, "g-ab.edodb", o), bc = merged({b, c}, "g-bc.edodb", o);
    const std::string left = content(merged({ab, c}, "g-ab-c.edodb", o));
    EXPECT_EQ(left, content(merged({a, bc}, "g-a-bc.edodb", o)));
    EXPECT_EQ(left, content(merged({c, a, b}, "g-cab.edodb", o)));
    EXPECT_NE(left.find("merge.values.run_id"), std::string::npos);
  }
}

TEST(Merge, AlignStartMovesEachHostToTheEarliestStartAndKeepsTheShift) {
  const std::string a = save("al-a.edodb", node_recording("node0", 0, {{0, 1}}, kT0, "10.0.0.1:29500", 2));
  const std::string b = save("al-b.edodb", node_recording("node1", 1, {{1, 2}}, kT0 + 2'500'000'000, "10.0.0.1:29500", 2));
  const Profile wall = ProfileStore(merged({a, b}, "al-wall.edodb"), ProfileStore::Mode::kReadOnly).load();
  MergeOptions o;
  o.align = ClockAlign::kStart;
  const Profile start = ProfileStore(merged({a, b}, "al-start.edodb", o), ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(wall.sessions.size(), start.sessions.size());
  for (size_t i = 0; i < wall.sessions.size(); ++i) {
    const Session &w = wall.sessions[i], &s = start.sessions[i];
    EXPECT_EQ(w.identity.clock_shift_ns, 0);
    const int64_t shift = w.host == "node1" ? -2'500'000'000 : 0;
    EXPECT_EQ(s.identity.clock_shift_ns, shift) << w.host;
    EXPECT_EQ(s.start_unix_ns, w.start_unix_ns + shift) << w.host;
  }
}

std::string refusal(const std::vector<std::string>& in, const std::string& out_name) {
  try {
    merged(in, out_name);
  } catch (const MergeRefused& e) {
    EXPECT_FALSE(std::filesystem::exists(temp_path(out_name))) << "nothing is written when a merge is refused";
    return e.what();
  }
  ADD_FAILURE() << "expected a refusal";
  return {};
}

TEST(Merge, RecordingsOfDifferentJobsAreRefusedUnlessForced) {
  const std::string a = save("j-a.edodb", node_recording("node0", 0, {{0, 1}, {1, 2}}, kT0, "10.0.0.1:29500"));
  const std::string b = save("j-b.edodb", node_recording("node1", 1, {{2, 3}, {3, 4}}, kT0, "10.0.0.9:29500"));
  const std::string why = refusal({a, b}, "j-out.edodb");
  EXPECT_NE(why.find(a), std::string::npos) << why;
  EXPECT_NE(why.find(b), std::string::npos) << why;
  EXPECT_NE(why.find("different jobs"), std::string::npos) << why;
  EXPECT_NE(why.find("--force"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  // torchrun's run id names the job when it is set (the endpoint may be reused by the next job).
  Profile r0 = node_recording("node0", 0, {{0, 1}}, kT0), r1 = node_recording("node1", 1, {{1, 2}}, kT0);
  for (auto& s : r0.sessions) s.identity.job_id = s.rank ? "job-A" : "";
  for (auto& s : r1.sessions) s.identity.job_id = s.rank ? "job-B" : "";
  EXPECT_NE(refusal({save("j-c.edodb", r0), save("j-d.edodb", r1)}, "j-out2.edodb").find("id=job-A"), std::string::npos);

  MergeOptions force;
  force.force = true;
  const std::string out = temp_path("j-forced.edodb");
  std::filesystem::remove(out);
  const MergeSummary s = merge_files({a, b}, out, force);
  EXPECT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(ProfileStore(out, ProfileStore::Mode::kReadOnly).load().sessions.size(), 6u);
}

TEST(Merge, TheSameRankTwiceOrNoJobIdentityIsRefused) {
  const std::string a = save("r-a.edodb", node_recording("node0", 0, {{0, 1}, {1, 2}}, kT0));
  const std::string b = save("r-b.edodb", node_recording("node0", 0, {{1, 9}, {2, 3}}, kT0 + 1));
  const std::string why = refusal({a, b}, "r-out.edodb");
  EXPECT_NE(why.find("both recorded rank 1"), std::string::npos) << why;
  EXPECT_NE(why.find(a), std::string::npos) << why;
  EXPECT_NE(why.find(b), std::string::npos) << why;

  Profile plain = node_recording("box", 0, {{3, 1}}, kT0);
  for (auto& s : plain.sessions) s.identity = {};
  const std::string c = save("r-c.edodb", plain);
  const std::string none = refusal({a, c}, "r-out2.edodb");
  EXPECT_NE(none.find(c + " has no job identity"), std::string::npos) << none;
  EXPECT_NE(none.find("--force"), std::string::npos) << none;
}

// Each rank traced on its own (EDO_OUTPUT + edo import per rank): every input's root is the
// rank itself; the merged job still lists every rank, each with its own lookups.
TEST(Merge, RanksTracedOnTheirOwnAreRootsAndRanks) {
  std::vector<std::string> in;
  for (int64_t r = 0; r < 3; ++r) {
    Profile p = node_recording("host" + std::to_string(r), r, {{r, uint64_t(r)}}, kT0, "m:1", 3);
    p.sessions.erase(p.sessions.begin());  // no launcher: the rank is the recording's first process
    in.push_back(save("solo" + std::to_string(r) + ".edodb", p));
  }
  const Profile job = ProfileStore(merged(in, "solo-job.edodb"), ProfileStore::Mode::kReadOnly).load();
  const JobView jv = job_view(job);
  ASSERT_EQ(jv.ranks.size(), 3u);
  EXPECT_EQ(jv.count(Role::kRoot), 3u);
  std::vector<std::string> view_of_table;
  table_views(job, {}, &view_of_table);
  const auto ranks = rank_views(job, jv, view_of_table);
  ASSERT_EQ(ranks.size(), 3u);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(ranks[size_t(r)].rank, r);
    EXPECT_EQ(ranks[size_t(r)].lookups_by_table.at("emb.small"), 3000u + 100 * uint64_t(r));
    EXPECT_EQ(ranks[size_t(r)].peak_bytes, 6400 + 160000);
    EXPECT_TRUE(ranks[size_t(r)].peak_from_timeline);
  }
}

TEST(Merge, TheOutputMayNotBeAnInput) {
  const std::string a = save("o-a.edodb", node_recording("node0", 0, {{0, 1}}, kT0, "m:1", 2));
  const std::string b = save("o-b.edodb", node_recording("node1", 1, {{1, 1}}, kT0, "m:1", 2));
  EXPECT_THROW(merge_files({a, b}, a, {}), DbError);
  EXPECT_EQ(ProfileStore(a, ProfileStore::Mode::kReadOnly).load().sessions.size(), 2u);
}

// Schema 7 keeps each process's job identity; a schema-6 file (before) opens with none.
TEST(Merge, JobIdentityIsStoredAndOlderFilesOpenWithout) {
  Profile p = node_recording("node0", 0, {{0, 1}}, kT0);
  p.sessions[1].identity.job_id = "elastic-1";
  p.sessions[1].identity.clock_shift_ns = -42;
  const std::string path = save("id.edodb", p);
  Profile q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  ASSERT_EQ(q.sessions.size(), 2u);
  EXPECT_TRUE(q.sessions[0].identity.empty());
  EXPECT_EQ(q.sessions[1].identity, p.sessions[1].identity);
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("DROP TABLE session_identity");
    db.exec("DELETE FROM schema_migrations WHERE version >= 7");
    db.exec("UPDATE edo_meta SET value = '6' WHERE key = 'schema_version'");
  }
  q = ProfileStore(path, ProfileStore::Mode::kReadOnly).load();
  EXPECT_TRUE(q.sessions[1].identity.empty());
  q.sessions[1].identity = p.sessions[1].identity;
  ProfileStore(path, ProfileStore::Mode::kReadWrite).save(q);
  EXPECT_EQ(ProfileStore(path, ProfileStore::Mode::kReadOnly).load().sessions[1].identity, p.sessions[1].identity);
}

// Issue 29: each rank's losses, and each table's optimizer hyperparameters and dense use, stay
// with their rank's session through a merge.
TEST(Merge, LossesOptimizerAndDenseUseStayWithTheirRank) {
  const std::string a = save("train-a.edodb", node_recording("a", 0, {{0, 1}, {1, 2}}, kT0));
  const std::string b = save("train-b.edodb", node_recording("b", 1, {{2, 3}, {3, 4}}, kT0 + 50));
  const Profile m = ProfileStore(merged({a, b}, "train-merged.edodb"), ProfileStore::Mode::kReadOnly).load();
  std::map<int64_t, int64_t> rank_of;
  int ranks = 0;
  for (const auto& s : m.sessions) {
    if (!s.rank) {
      EXPECT_TRUE(s.losses.empty());
      continue;
    }
    ++ranks;
    rank_of[s.id] = *s.rank;
    ASSERT_EQ(s.losses.size(), 2u);
    EXPECT_EQ(s.losses[0].loss, 1.0 + double(*s.rank));
    EXPECT_EQ(s.losses[1].step, 2u);
  }
  EXPECT_EQ(ranks, 4);
  int small = 0, big = 0;
  for (const auto& t : m.tables) {
    const int64_t r = rank_of.at(t.session_id);
    if (t.name == "emb.small") {
      ++small;
      ASSERT_TRUE(t.optimizer_params.has_value());
      EXPECT_EQ(t.optimizer_params->kind, "adagrad");
      EXPECT_EQ(t.optimizer_params->lr, 0.01 * double(r + 1));
    } else {
      ++big;
      EXPECT_EQ(t.dense_use, "read whole on rank " + std::to_string(r));
    }
  }
  EXPECT_EQ(small, 4);
  EXPECT_EQ(big, 4);
}

}  // namespace
}  // namespace edo::db
