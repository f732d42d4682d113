// `edo report` and `edo diff` on hand-built recordings: what each field means (memory in
// named parts), how processes of one job are shown, and names that would break a terminal.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "run_command.h"

namespace {

using edo::testing::run_command;
using nlohmann::json;
namespace model = edo::model;

const std::string kEdo = EDO_BIN;

std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() /
             ("edo-report-test-" + std::to_string(getpid()) + "-" + info->name());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

model::Session session(int64_t id, int64_t pid, int64_t parent_pid) {
  model::Session s;
  s.id = id;
  s.command = "python3 train.py";
  s.host = "box";
  s.pid = pid;
  s.parent_pid = parent_pid;
  s.source = "record";
  return s;
}

// A table with `reads` counted (row ids), its weights f32.
model::Table table(int64_t session_id, const std::string& name, uint64_t rows, uint32_t dim,
                   const std::vector<int64_t>& reads, uint64_t base = 0x10000) {
  model::Table t;
  t.session_id = session_id;
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.dtype = "fp32";
  t.device = "host";
  t.base_address = base;
  t.weight_bytes = rows * dim * 4;
  edo::stats::TableIngestor ing(rows, edo::stats::StatsConfig{});
  if (!reads.empty()) {
    ing.add(reads.data(), reads.size());
    ing.close_window();
    t.aggregate = ing.take_delta();
  }
  return t;
}

void save(const std::string& path, model::Profile p) {
  edo::db::ProfileStore(path, edo::db::ProfileStore::Mode::kCreate).save(p);
}

json report_json(const std::string& path, const std::string& extra = "") {
  auto r = run_command(kEdo + " report --json " + extra + " " + quoted(path));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

const json* find_table(const json& report, const std::string& name) {
  for (const auto& t : report["tables"])
    if (t["name"] == name) return &t;
  return nullptr;
}

// An Adam-trained table, an LM head tied to it, and a table without optimizer.
model::Profile trained_profile(uint64_t item_rows = 50) {
  model::Profile p;
  p.sessions.push_back(session(1, 100, 1));
  p.sessions[0].exit_code = 0;
  p.tables.push_back(table(1, "emb", 1000, 16, {1, 2, 2}, 0x10000));
  p.tables.back().optimizer_bytes = 128000;  // two Adam moments
  p.tables.back().grad_bytes = 64000;
  p.tables.push_back(table(1, "lm_head", 1000, 16, {}, 0x10000));
  p.tables.push_back(table(1, "item", item_rows, 8, {0, 0, 1}, 0x90000));
  p.ties.push_back({1, "emb", "lm_head"});
  return p;
}

// Defect (issue 14, item 7): "bytes" was weights only in report --json, weights plus extra in
// the text report and in diff, and the footer called optimizer state and gradients together
// "optimizer state". Now four named fields, the same in every output.
TEST(ReportBytes, NamedPartsAddUpInJsonAndText) {
  const std::string db = temp_path("trained.edodb");
  save(db, trained_profile());
  json j = report_json(db);
  EXPECT_EQ(j["schema"], "edo.report/2");
  const json* emb = find_table(j, "emb");
  const json* head = find_table(j, "lm_head");
  ASSERT_TRUE(emb && head);
  EXPECT_EQ((*emb)["weight_bytes"], 64000);
  EXPECT_EQ((*emb)["optimizer_bytes"], 128000);
  EXPECT_EQ((*emb)["grad_bytes"], 64000);
  EXPECT_EQ((*emb)["total_bytes"], 256000);
  EXPECT_FALSE(emb->contains("bytes"));
  EXPECT_FALSE(emb->contains("extra_bytes"));
  EXPECT_EQ((*head)["weight_bytes"], 64000);  // its shape's weights...
  EXPECT_EQ((*head)["total_bytes"], 0);       // ...which are emb's, counted there
  EXPECT_EQ((*head)["shares_weights_of"], "emb");
  uint64_t sum = 0;
  for (const auto& t : j["tables"]) sum += t["total_bytes"].get<uint64_t>();
  EXPECT_EQ(j["memory"]["table_bytes"], sum);
  EXPECT_EQ(j["memory"]["weight_bytes"], 64000 + 1600);
  EXPECT_EQ(j["memory"]["optimizer_bytes"], 128000);
  EXPECT_EQ(j["memory"]["grad_bytes"], 64000);

  auto text = run_command(kEdo + " report " + quoted(db));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* needle : {"WEIGHTS", "OPTIMIZER", "GRADS", "BYTES = WEIGHTS + OPTIMIZER + GRADS", "250.00 KiB",
                             "= weights 64.06 KiB + optimizer state 125.00 KiB + gradients 62.50 KiB"}) {
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  }
  EXPECT_EQ(text.out.find("weights plus optimizer state"), std::string::npos) << text.out;
}

// Defect (issue 14, item 8): diff --json printed every number as a float ("bytes": 64000.0).
TEST(DiffBytes, IntegersStayIntegersAndBytesAreNamed) {
  const std::string a = temp_path("a.edodb"), b = temp_path("b.edodb");
  save(a, trained_profile());
  model::Profile pb = trained_profile(100);
  pb.tables[0].grad_bytes = 0;
  save(b, pb);
  auto r = run_command(kEdo + " diff --json " + quoted(a) + " " + quoted(b));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "edo.diff/2");
  for (const auto& t : j["tables"]) {
    for (const char* key : {"weight_bytes", "optimizer_bytes", "grad_bytes", "total_bytes", "lookups", "unique_rows"}) {
      EXPECT_TRUE(t[key]["before"].is_number_integer()) << t["name"] << " " << key << " " << t[key];
      EXPECT_TRUE(t[key]["after"].is_number_integer()) << t["name"] << " " << key << " " << t[key];
    }
    EXPECT_TRUE(t["coverage_top_1pct"]["before"].is_number_float());
    if (t["name"] == "emb") {
      EXPECT_EQ(t["grad_bytes"]["before"], 64000);
      EXPECT_EQ(t["grad_bytes"]["after"], 0);
    }
  }
  EXPECT_TRUE(j["memory"]["table_bytes"]["before"].is_number_integer());
  auto text = run_command(kEdo + " diff " + quoted(a) + " " + quoted(b));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("grad_bytes"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("62.50 KiB"), std::string::npos) << text.out;
}

}  // namespace
