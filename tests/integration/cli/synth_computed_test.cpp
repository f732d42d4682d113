// `edo synth` on workloads whose statistics it computes (long streams over small tables,
// stats::iid_aggregate) beside ones it streams: the same output for one seed whatever the
// threads, and a recording the report reads like a streamed one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "edo/db/profile_store.h"
#include "edo/stats/iid_workload.h"
#include "run_command.h"

namespace {

using edo::testing::run_command;

const std::string kEdo = EDO_BIN;

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("edo-synth-computed-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return (dir / name).string();
}

// `edo synth -o NAME ARGS` in this test's folder; the recording's path.
std::string synth_db(const std::string& name, const std::string& args) {
  const std::string db = temp_path(name);
  const auto r = run_command(kEdo + " synth -o " + db + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return db;
}
edo::model::Profile load(const std::string& db) { return edo::db::ProfileStore(db, edo::db::ProfileStore::Mode::kReadOnly).load(); }
edo::model::Profile synth(const std::string& name, const std::string& args) { return load(synth_db(name, args)); }

// Everything a table's statistics hold, in one comparable string.
std::string table_state(const edo::model::Table& t) {
  std::string s = t.name + " " + std::to_string(t.rows) + " " + t.aggregate.serialize();
  for (const auto& f : t.first_seen)
    s += " " + std::to_string(f.position) + ":" + std::to_string(f.new_rows) + ":" + std::to_string(f.lookups);
  return s;
}

// Sizes 200..20,000 rows with 400,000 lookups: tables up to ~3,000 rows are computed (4x the
// drawn sequence of 32 lookups a row), larger ones streamed.
const std::string kMixed =
    "--tables 6 --min-rows 200 --rows 20000 --min-zipf 0.8 --zipf 1.2 --lookups 400000 --batch 16384 --window-batches 8 --seed 5";

TEST(SynthComputed, SameOutputWhateverTheThreads) {
  const auto one = synth("one.edodb", kMixed + " --threads 1");
  const auto three = synth("three.edodb", kMixed + " --threads 3");
  const auto again = synth("again.edodb", kMixed + " --threads 3");
  ASSERT_EQ(one.tables.size(), 6u);
  ASSERT_EQ(three.tables.size(), 6u);
  ASSERT_EQ(again.tables.size(), 6u);
  // Both kinds of table are in the workload.
  ASSERT_TRUE(one.metadata.count("synth.computed_tables"));
  const int computed = std::stoi(one.metadata.at("synth.computed_tables"));
  int small = 0;  // tables the documented rule computes (windows of 8 x 16384 lookups)
  for (const auto& t : one.tables)
    small += edo::stats::iid_aggregate_applies(t.rows, {400000, 8 * 16384, edo::stats::iid_drawn_lookups(t.rows)}, {});
  EXPECT_EQ(computed, small);
  EXPECT_GT(computed, 0);
  EXPECT_LT(computed, 6);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(table_state(one.tables[i]), table_state(three.tables[i])) << one.tables[i].name;
    EXPECT_EQ(table_state(three.tables[i]), table_state(again.tables[i])) << one.tables[i].name;
    EXPECT_FALSE(one.tables[i].first_seen.empty()) << one.tables[i].name;
  }
  // Another seed, other draws.
  const auto other = synth("other.edodb", "--tables 6 --min-rows 200 --rows 20000 --min-zipf 0.8 --zipf 1.2 --lookups 400000 --batch 16384 --window-batches 8 --seed 6");
  EXPECT_NE(table_state(one.tables[0]), table_state(other.tables[0]));
}

// A computed table and the same one streamed: the same shape of recording (totals exact, the
// same windows and first-seen segments), and the streamed one says nothing was computed.
TEST(SynthComputed, RecordsWhatTheStreamedPathRecords) {
  const std::string args = "--tables 1 --rows 1000 --zipf 1.1 --lookups 300000 --batch 10000 --window-batches 10 --seed 3";
  const std::string computed_db = synth_db("computed.edodb", args);
  const auto computed = load(computed_db);
  const auto streamed = synth("streamed.edodb", args + " --stream");
  ASSERT_EQ(computed.tables.size(), 1u);
  ASSERT_EQ(streamed.tables.size(), 1u);
  EXPECT_EQ(computed.metadata.at("synth.computed_tables"), "1");
  EXPECT_FALSE(streamed.metadata.count("synth.computed_tables"));
  const auto& c = computed.tables[0];
  const auto& s = streamed.tables[0];
  EXPECT_EQ(c.aggregate.lookups(), 300000u);
  EXPECT_EQ(s.aggregate.lookups(), 300000u);
  EXPECT_EQ(c.aggregate.stack_distances().total(), 300000.0);
  EXPECT_EQ(c.aggregate.stack_distances().cold(), static_cast<double>(c.aggregate.unique_rows()));
  ASSERT_EQ(c.aggregate.windows().size(), s.aggregate.windows().size());  // 3 windows of 100,000
  for (size_t w = 0; w < c.aggregate.windows().size(); ++w) {
    EXPECT_EQ(c.aggregate.windows()[w].lookups, s.aggregate.windows()[w].lookups);
    EXPECT_EQ(c.aggregate.windows()[w].rows.size(), s.aggregate.windows()[w].rows.size());
  }
  ASSERT_EQ(c.first_seen.size(), s.first_seen.size());
  uint64_t new_rows = 0, lookups = 0;
  for (size_t k = 0; k < c.first_seen.size(); ++k) {
    EXPECT_EQ(c.first_seen[k].position, s.first_seen[k].position);
    new_rows += c.first_seen[k].new_rows;
    lookups += c.first_seen[k].lookups;
  }
  EXPECT_EQ(new_rows, c.aggregate.unique_rows());
  EXPECT_EQ(lookups, 300000u);
  const auto* sample = c.aggregate.ordered_sample();
  ASSERT_NE(sample, nullptr);
  EXPECT_TRUE(sample->valid);
  EXPECT_EQ(sample->end, 300000u);
  // The report reads it.
  const auto r = run_command(kEdo + " report " + computed_db);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("synth.table_0"), std::string::npos);
}

}  // namespace
