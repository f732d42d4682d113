// `edo report` and `edo diff` on hand-built recordings: what each field means (memory in
// named parts), how processes of one job are shown, and names that would break a terminal.
#include <gtest/gtest.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
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
  std::filesystem::remove(dir / name);  // left by an earlier run with the same pid
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

// A table with `reads` counted (row ids), its weights fp32.
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

// ---- Hostile databases (issue 13): what a file can hold must not break the terminal, the
// one-line errors, or the process. ----

namespace hostile {

const std::vector<std::string> kNames = {
    "quote'\"name",
    "new\nline",
    "tab\tname",
    "esc\x1b[31mred\x1b[0m",
    "osc\x1b]0;title\x07",
    "code$(touch /tmp/edo-pwned)`id`; DROP TABLE tables;--",
    "c1 csi \xc2\x9b" "31m",
    "bidi \xe2\x80\xae" "evil",
    "back\\slash",
};
const std::string kNotUtf8 = "bytes \xff\xfe";

// True when `s` has something a terminal would act on: a control byte other than newline, a
// C1 control (as UTF-8), or a bidirectional override.
bool has_terminal_controls(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f)
      return true;
    if (s.compare(i, 3, "\xe2\x80\xae") == 0) return true;
  }
  return false;
}

model::Profile named_profile() {
  model::Profile p;
  p.sessions.push_back(session(1, 100, 1));
  p.sessions[0].command = "python3 \x1b[2Jtrain.py\nsecond line";
  p.sessions[0].host = "host\x1b[5m";
  p.sessions[0].exit_code = 0;
  uint64_t base = 0x10000;
  for (const auto& n : kNames) p.tables.push_back(table(1, n, 100, 4, {1, 2, 3}, base += 0x100000));
  p.tables.push_back(table(1, kNotUtf8, 100, 4, {4}, base += 0x100000));
  p.ties.push_back({1, kNames[0], kNames[1]});
  return p;
}

}  // namespace hostile

TEST(HostileDatabase, NamesAreEscapedOnTheTerminalAndExactInJson) {
  const std::string db = temp_path("names.edodb"), db2 = temp_path("names2.edodb");
  save(db, hostile::named_profile());
  model::Profile other = hostile::named_profile();
  other.tables.erase(other.tables.begin() + 2);  // one table only in before
  other.tables[0].aggregate = edo::stats::TableAggregate();
  save(db2, other);

  for (const std::string& args : std::vector<std::string>{" report --top 3 ", " diff '" + db2 + "' "}) {
    auto r = run_command(kEdo + args + quoted(db));
    ASSERT_EQ(r.exit_code, 0) << args << r.err;
    EXPECT_FALSE(hostile::has_terminal_controls(r.out)) << args << ":\n" << r.out;
    // Every name is on one line, escaped the same way each time.
    EXPECT_NE(r.out.find("new\\nline"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tab\\tname"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("esc\\x1b[31mred\\x1b[0m"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bidi \\u{202e}evil"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("bytes \\xff\\xfe"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("back\\\\slash"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("code$(touch /tmp/edo-pwned)`id`; DROP TABLE tables;--"), std::string::npos) << r.out;
  }
  auto text = run_command(kEdo + " report " + quoted(db));
  EXPECT_NE(text.out.find("job: python3 \\x1b[2Jtrain.py\\nsecond line"), std::string::npos) << text.out;
  EXPECT_FALSE(std::filesystem::exists("/tmp/edo-pwned"));

  // JSON keeps names exact (JSON escapes them); bytes that are not UTF-8 become U+FFFD.
  json j = report_json(db);
  std::set<std::string> names;
  for (const auto& t : j["tables"]) names.insert(t["table_name"].get<std::string>());
  for (const auto& n : hostile::kNames) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_TRUE(names.count("bytes \xef\xbf\xbd\xef\xbf\xbd")) << ::testing::PrintToString(names);
  EXPECT_EQ(j["job"]["command"], "python3 \x1b[2Jtrain.py\nsecond line");
  auto d = run_command(kEdo + " diff --json " + quoted(db) + " " + quoted(db2));
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(json::parse(d.out)["only_in_before"], json::array({"tab\tname"}));
}

// At the user's level: a job registers tables with hostile names through the C API; edo record's
// summary, the report and --top show them escaped, the JSON exactly.
TEST(HostileDatabase, NamesFromARealJobUnderRecord) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string dir = std::filesystem::path(temp_path("x")).parent_path().string();
  const std::string job = dir + "/job.py", db = dir + "/job.edodb";
  std::ofstream(job) << R"(import ctypes, os
lib = ctypes.CDLL(os.environ["EDO_TRACE_LIB"])
lib.edo_table_register.restype = ctypes.c_int64
lib.edo_table_register.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int, ctypes.c_int]
lib.edo_table_lookup.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
weights = [ctypes.create_string_buffer(64 * 4 * 4) for _ in range(3)]
idx = (ctypes.c_int64 * 3)(1, 2, 2)
for w, name in zip(weights, [b"evil\n\x1b[2J\x1b]0;owned\x07", b"tab\there", b"ok"]):
    h = lib.edo_table_register(name, ctypes.addressof(w), 64, 4, 0, 0)
    lib.edo_table_lookup(h, idx, 3, 1, 0, None)
)";
  auto r = run_command(kEdo + " record -o " + quoted(db) + " -- /usr/bin/python3 " + quoted(job));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(hostile::has_terminal_controls(r.err)) << r.err;
  EXPECT_NE(r.err.find("3 table(s)"), std::string::npos) << r.err;
  auto text = run_command(kEdo + " report --top 2 " + quoted(db));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_FALSE(hostile::has_terminal_controls(text.out)) << text.out;
  EXPECT_NE(text.out.find("evil\\n\\x1b[2J\\x1b]0;owned\\x07"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tab\\there: top 2 rows"), std::string::npos) << text.out;
  json j = report_json(db);
  EXPECT_NE(find_table(j, "evil\n\x1b[2J\x1b]0;owned\x07"), nullptr) << j["tables"].dump();
  EXPECT_EQ(find_table(j, "evil\\n\\x1b[2J\\x1b]0;owned\\x07"), nullptr);  // exact, not escaped
  EXPECT_NE(find_table(j, "tab\there"), nullptr);
  // A command that does not exist is named escaped too.
  auto missing = run_command(kEdo + " record -o " + quoted(dir + "/m.edodb") + " -- \"$(printf 'no\\033[2Jsuch')\"");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_FALSE(hostile::has_terminal_controls(missing.err)) << missing.err;
}

// An error message that quotes the file (a table's name) stays one escaped line.
TEST(HostileDatabase, ErrorsQuotingANameStayOneLine) {
  const std::string db = temp_path("undecodable.edodb");
  save(db, hostile::named_profile());
  {
    SQLite::Database d(db, SQLite::OPEN_READWRITE);
    d.exec("UPDATE table_stats SET aggregate = x'00112233' WHERE table_id = 2");
  }
  auto r = run_command(kEdo + " report " + quoted(db));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(hostile::has_terminal_controls(r.err)) << r.err;
  EXPECT_NE(r.err.find("do not decode"), std::string::npos) << r.err;
}

// Wrong schema versions and missing tables: one line naming the file, exit 1, no crash.
TEST(HostileDatabase, WrongSchemaAndMissingTablesAreOneLine) {
  struct Case {
    std::string sql, needle;
  };
  const std::vector<Case> cases = {
      {"UPDATE edo_meta SET value = '999' WHERE key = 'schema_version'", "newer edo"},
      {"UPDATE edo_meta SET value = 'two' WHERE key = 'schema_version'", "schema version is not a number"},
      {"UPDATE edo_meta SET value = '0' WHERE key = 'schema_version'", "schema version 0"},
      {"UPDATE edo_meta SET value = '-7' WHERE key = 'schema_version'", "schema version -7"},
      {"DELETE FROM edo_meta WHERE key = 'schema_version'", "no schema version"},
      {"UPDATE edo_meta SET value = 'other.tool' WHERE key = 'format'", "not an edo database"},
      {"DROP TABLE edo_meta", "not an edo database"},
      {"DROP TABLE sessions", "sessions"},
      {"DROP TABLE tables", "tables"},
      {"DROP TABLE table_stats", "table_stats"},
      {"DROP TABLE ties", "ties"},
      {"DROP TABLE memory_events", "memory_events"},
      {"DROP TABLE kernels", "kernels"},
      {"DROP TABLE ranges", "ranges"},
      {"DROP TABLE metadata", "metadata"},
      {"ALTER TABLE tables DROP COLUMN grad_bytes", "grad_bytes"},
      {"UPDATE edo_meta SET value = '1' WHERE key = 'schema_version'", "upgrade from schema 1 failed"},  // v2 claiming v1
  };
  for (const auto& c : cases) {
    const std::string db = temp_path("schema.edodb");
    std::filesystem::remove(db);
    save(db, trained_profile());
    {
      SQLite::Database d(db, SQLite::OPEN_READWRITE);
      d.exec(c.sql);
    }
    for (const std::string& cmd : std::vector<std::string>{" report ", " report --json ", " diff " + quoted(db) + " "}) {
      auto r = run_command(kEdo + cmd + quoted(db));
      EXPECT_EQ(r.exit_code, 1) << c.sql << ": " << r.err << r.out;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.sql << ": " << r.err;
      EXPECT_NE(r.err.find(db), std::string::npos) << c.sql << ": " << r.err;
      EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.sql << ": " << r.err;
      EXPECT_TRUE(r.out.empty()) << c.sql << ": " << r.out;
    }
  }
}

// Counts and sizes at the edges of their types, values of the wrong SQL type, NaN and
// infinite statistics: the commands finish, the text shows no nan/inf, the JSON parses. (A
// negative count is damage, refused naming its table: DbSafety.DamagedCountsNameTheirTableAndFile;
// issue 30 §9 turned this test's -1 values into the largest positive ones.)
TEST(HostileDatabase, HugeCountsAndNaNStatisticsDoNotBreakTheOutput) {
  const std::string db = temp_path("huge.edodb"), db2 = temp_path("huge2.edodb");
  save(db, trained_profile());
  save(db2, trained_profile());
  {
    SQLite::Database d(db, SQLite::OPEN_READWRITE);
    d.exec("UPDATE tables SET weight_bytes = 9223372036854775807, optimizer_bytes = 9223372036854775807, grad_bytes = 9e999 WHERE id = 1");
    d.exec("UPDATE tables SET rows = 9223372036854775807, dim = 4294967295 WHERE id = 3");
    d.exec("DELETE FROM table_stats WHERE table_id = 3");  // no counts: built from the huge shape
    d.exec("UPDATE tables SET rows = 'many', dim = 4.5 WHERE id = 2");
    d.exec("UPDATE sessions SET duration_ns = 9e999, steps = 9223372036854775807, dropped_events = 9223372036854775807,"
           " start_unix_ns = 'yesterday', exit_code = 99999999999");
    d.exec("UPDATE table_summary SET zipf_alpha = 9e999, coverage_top_1pct = -9e999");
    d.exec("INSERT INTO memory_events VALUES (1, 1, 9223372036854775807, 16, 0, 0, 'cudaMalloc', 'emb')");
    d.exec("INSERT INTO memory_events VALUES (1, 2, 9223372036854775807, 32, 0, 0, 'cudaMalloc', '')");
    d.exec("INSERT INTO memory_events VALUES (1, 3, -9223372036854775807, 16, 0, 0, 'cudaFree', 'emb')");
    d.exec("INSERT INTO metadata VALUES ('job.root_pid', 'not a pid'), ('job.duration_ns', '1e999')");
  }
  for (const std::string& cmd : std::vector<std::string>{" report --top 5 ", " diff " + quoted(db2) + " ", " diff --json " + quoted(db2) + " "}) {
    auto r = run_command("timeout 60 " + kEdo + cmd + quoted(db));
    EXPECT_EQ(r.exit_code, 0) << cmd << r.err;
    for (const char* bad : {"nan", "inf", "-nan"}) EXPECT_EQ(r.out.find(bad), std::string::npos) << cmd << ":\n" << r.out;
  }
  auto r = run_command("timeout 60 " + kEdo + " report --json --top 5 " + quoted(db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);  // throws on NaN/inf written as numbers
  EXPECT_EQ(j["memory"]["peak_bytes"], std::numeric_limits<int64_t>::max());  // saturated, not wrapped
  EXPECT_EQ(j["memory"]["table_bytes"], std::numeric_limits<uint64_t>::max());
}

}  // namespace

// Issue 22: a table read on two ranks has two LRU curves. Both ranks read rows 0..99 in the same
// order, ten times: each rank's own cache below 100 rows never hits, one cache for both hits
// every second reference (rank 1 reads each row right after rank 0, in lock-step). A table
// whose rank-1 stream is two processes' merged has no union curve, and the report says why;
// a table read on one rank has none at all.
TEST(ReportUnionLru, TwoRanksShowBothCurvesOrSayWhyThereIsNone) {
  model::Profile p;
  std::vector<int64_t> cyclic;
  for (int i = 0; i < 1000; ++i) cyclic.push_back(i % 100);
  for (int64_t rank : {0, 1}) {
    p.sessions.push_back(session(rank + 1, 100 + rank, 1));
    p.sessions.back().rank = rank;
    p.tables.push_back(table(rank + 1, "emb", 100, 4, cyclic, 0x10000));
    p.tables.push_back(table(rank + 1, "side", 50, 4, {1, 2, 3, 1}, 0x90000));
  }
  // Rank 1's "side": the aggregates of two streams merged (its order is lost).
  ASSERT_TRUE(p.tables[3].aggregate.merge(table(2, "side", 50, 4, {4, 5}).aggregate));
  p.tables.push_back(table(1, "solo", 10, 4, {1, 1, 2}, 0xa0000));  // rank 0 only
  const std::string db = temp_path("ranks.edodb");
  save(db, p);
  const json j = report_json(db);
  const json* emb = find_table(j, "emb");
  const json* side = find_table(j, "side");
  const json* solo = find_table(j, "solo");
  ASSERT_TRUE(emb && side && solo) << j.dump(2);
  EXPECT_EQ((*emb)["lru_hit_rate_at"]["1pct"], 0.0);
  const json& u = (*emb)["lru_union"];
  ASSERT_TRUE(u.is_object()) << emb->dump(2);
  EXPECT_EQ(u["available"], true);
  EXPECT_EQ(u["ranks"], 2);
  EXPECT_EQ(u["rate"], 1.0);
  EXPECT_EQ(u["estimated_from"], "ordered samples interleaved by progress");
  EXPECT_NE(u["assumption"].get<std::string>().find("lock-step"), std::string::npos);
  EXPECT_DOUBLE_EQ(u["lru_hit_rate_at"]["1pct"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(u["lru_hit_rate_at"]["100pct"].get<double>(), 0.95);
  EXPECT_EQ(u["differs"], true);
  EXPECT_EQ((*side)["lru_union"]["available"], false);
  EXPECT_NE((*side)["lru_union"]["why_not"].get<std::string>().find("rank 1's ordered sample is not one stream's order"),
            std::string::npos)
      << side->dump(2);
  EXPECT_TRUE((*solo)["lru_union"].is_null());

  auto text = run_command(kEdo + " report --wide " + quoted(db));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* needle : {"model-parallel LRU (one cache for the lookups of every rank",
                             "emb: model-parallel LRU1% 50.0% (per rank 0.0%), LRU10% 50.0% (per rank 0.0%); 2 ranks, every reference",
                             "side: unavailable: rank 1's ordered sample is not one stream's order"})
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  const size_t section = text.out.find("model-parallel LRU (");
  ASSERT_NE(section, std::string::npos);
  EXPECT_EQ(text.out.find("solo:", section), std::string::npos) << "read on one rank: no union line\n" << text.out;
}
