// Fuzz target: a small valid .edodb (two sessions, an exact and a sketched table, a tie,
// memory events, kernels, ranges, metadata) edited through SQL as the input directs, then
// read the way `edo report` reads it. The input is a program of edits, each a few bytes:
//   op    UPDATE one column of one row or of every row to a hostile value; DELETE rows;
//         DROP a table; DROP a column; duplicate a row; overwrite bytes of a statistics blob;
//         change the schema version or format tag
//   then  which table, column, row and value (NULL, 0, -1, INT64 extremes, 2^32, 2^53+1,
//         +-1e308, names with quotes, newlines, tabs, escape sequences and code, long text,
//         a blob or an integer taken from the input)
// Edits that SQLite refuses (constraints) are skipped. Reading must end in a result or a
// DbError, never a crash, leak, hang or a wild allocation.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "read_side.h"

namespace {

struct Column {
  const char* table;
  const char* column;
};
// Every column of the current schema that the loader reads (db/src/schema.cpp). Seeds and
// regression inputs name columns by their index here: append new columns at the end of their
// table's group and renumber the inputs (tests/fuzz/make-seeds.sh) when the schema changes.
const Column kColumns[] = {
    {"edo_meta", "key"}, {"edo_meta", "value"},
    {"sessions", "id"}, {"sessions", "command"}, {"sessions", "host"}, {"sessions", "pid"},
    {"sessions", "parent_pid"}, {"sessions", "rank"}, {"sessions", "local_rank"},
    {"sessions", "start_unix_ns"}, {"sessions", "duration_ns"}, {"sessions", "exit_code"},
    {"sessions", "gpus"}, {"sessions", "source"}, {"sessions", "dropped_events"}, {"sessions", "steps"},
    {"tables", "id"}, {"tables", "session_id"}, {"tables", "name"}, {"tables", "rows"}, {"tables", "dim"},
    {"tables", "dtype"}, {"tables", "device"}, {"tables", "base_address"}, {"tables", "weight_bytes"},
    {"tables", "optimizer_bytes"}, {"tables", "grad_bytes"},
    {"table_stats", "table_id"}, {"table_stats", "counts_mode"}, {"table_stats", "lookups"},
    {"table_stats", "unique_rows"}, {"table_stats", "out_of_range"}, {"table_stats", "aggregate"},
    {"ties", "session_id"}, {"ties", "table_name"}, {"ties", "tied_with"},
    {"memory_events", "session_id"}, {"memory_events", "time_ns"}, {"memory_events", "bytes"},
    {"memory_events", "address"}, {"memory_events", "stream"}, {"memory_events", "device"},
    {"memory_events", "kind"}, {"memory_events", "table_name"},
    {"kernels", "session_id"}, {"kernels", "name"}, {"kernels", "launches"}, {"kernels", "total_ns"},
    {"kernels", "tables"},
    {"ranges", "session_id"}, {"ranges", "name"}, {"ranges", "count"}, {"ranges", "total_ns"},
    {"ranges", "lookups"}, {"ranges", "alloc_bytes"},
    {"metadata", "key"}, {"metadata", "value"},
};
const char* const kTables[] = {"edo_meta", "sessions", "tables", "table_stats", "table_summary", "table_curves",
                               "ties", "memory_events", "kernels", "ranges", "metadata"};

// Reads the edit program; past the end every read is 0.
struct Reader {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t byte() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{byte()} << (8 * i);
    return v;
  }
  std::string bytes(size_t len) {
    len = std::min(len, n);
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

void bind_value(SQLite::Statement& st, int index, Reader& r) {
  switch (r.byte() % 20) {
    case 0: st.bind(index); break;
    case 1: st.bind(index, int64_t{0}); break;
    case 2: st.bind(index, int64_t{-1}); break;
    case 3: st.bind(index, std::numeric_limits<int64_t>::max()); break;
    case 4: st.bind(index, std::numeric_limits<int64_t>::min()); break;
    case 5: st.bind(index, int64_t{1} << 32); break;
    case 6: st.bind(index, (int64_t{1} << 53) + 1); break;
    case 7: st.bind(index, 1e308); break;
    case 8: st.bind(index, -1e308); break;
    case 9: st.bind(index, 0.5); break;
    case 10: st.bind(index, std::string("it's \"quoted\"; DROP TABLE tables; --")); break;
    case 11: st.bind(index, std::string("two\nlines\tand\x1b[31m red \x1b]0;title\x07 \r back")); break;
    case 12: st.bind(index, std::string("</script><script>alert(1)</script> ${HOME} $(id) `id`")); break;
    case 13: st.bind(index, std::string(20000, 'x')); break;
    case 14: st.bind(index, std::string()); break;
    case 15: st.bind(index, std::string("\xff\xfe invalid utf-8 \xc3")); break;
    case 16: st.bind(index, std::string("exact")); break;
    case 17: st.bind(index, std::string("sketch")); break;
    case 18: {
      const std::string b = r.bytes(r.byte());
      st.bind(index, b.data(), static_cast<int>(b.size()));
      break;
    }
    default: st.bind(index, static_cast<int64_t>(r.u64())); break;
  }
}

// A WHERE clause: every row, or one rowid.
std::string where(Reader& r) {
  const uint8_t w = r.byte();
  return w < 96 ? "" : " WHERE rowid = " + std::to_string(w % 8);
}

void apply_edit(SQLite::Database& db, Reader& r) {
  const uint8_t op = r.byte() % 16;
  if (op < 8) {  // the common case: one column gets a hostile value
    const Column& c = kColumns[r.byte() % (sizeof kColumns / sizeof kColumns[0])];
    SQLite::Statement st(db, std::string("UPDATE ") + c.table + " SET " + c.column + " = ?" + where(r));
    bind_value(st, 1, r);
    st.exec();
    return;
  }
  const char* table = kTables[r.byte() % (sizeof kTables / sizeof kTables[0])];
  switch (op) {
    case 8: db.exec(std::string("DELETE FROM ") + table + where(r)); break;
    case 9: db.exec(std::string("DROP TABLE ") + table); break;
    case 10: {
      const Column& c = kColumns[r.byte() % (sizeof kColumns / sizeof kColumns[0])];
      db.exec(std::string("ALTER TABLE ") + c.table + " DROP COLUMN " + c.column);
      break;
    }
    case 11: db.exec(std::string("INSERT INTO ") + table + " SELECT * FROM " + table + where(r)); break;
    case 12:
    case 13: {  // overwrite a few bytes inside a statistics blob
      SQLite::Statement q(db, "SELECT table_id, aggregate FROM table_stats ORDER BY table_id");
      std::vector<std::pair<int64_t, std::string>> blobs;
      while (q.executeStep()) blobs.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getString());
      if (blobs.empty()) return;
      auto& [id, blob] = blobs[r.byte() % blobs.size()];
      if (blob.empty()) return;
      const size_t pos = (size_t{r.byte()} << 8 | r.byte()) % blob.size();
      const std::string patch = r.bytes(1 + r.byte() % 8);
      for (size_t i = 0; i < patch.size() && pos + i < blob.size(); ++i) blob[pos + i] = patch[i];
      if (op == 13) blob.resize(pos);  // and cut it there
      SQLite::Statement up(db, "UPDATE table_stats SET aggregate = ? WHERE table_id = ?");
      up.bind(1, blob.data(), static_cast<int>(blob.size()));
      up.bind(2, id);
      up.exec();
      break;
    }
    case 14: {
      static const char* const versions[] = {"0", "-1", "3", "999999999999", "1.5", "", "one", "1"};
      SQLite::Statement st(db, "UPDATE edo_meta SET value = ? WHERE key = 'schema_version'");
      st.bind(1, versions[r.byte() % 8]);
      st.exec();
      break;
    }
    default: {
      SQLite::Statement st(db, "UPDATE edo_meta SET value = ? WHERE key = 'format'");
      st.bind(1, r.byte() % 2 ? "edo.profile " : "other");
      st.exec();
      break;
    }
  }
}

edo::model::Profile template_profile() {
  using namespace edo;
  model::Profile p;
  for (int64_t id : {1, 2}) {
    model::Session s;
    s.id = id;
    s.command = "python3 train.py --rank " + std::to_string(id);
    s.host = "host";
    s.pid = 1000 + id;
    s.parent_pid = id == 1 ? 1 : 1001;
    if (id == 2) s.rank = 1;
    s.start_unix_ns = 1'700'000'000'000'000'000;
    s.duration_ns = 2'000'000'000;
    if (id == 1) s.exit_code = 0;
    s.source = "record";
    s.steps = 10;
    p.sessions.push_back(s);
  }
  stats::StatsConfig exact;
  stats::StatsConfig sketch;
  sketch.exact_rows_limit = 100;
  sketch.cms_width = 256;
  sketch.top_k = 32;
  sketch.hll_precision = 6;
  const struct {
    const char* name;
    uint64_t rows;
    stats::StatsConfig cfg;
    int64_t session;
  } tables[] = {{"emb.user", 50, exact, 1}, {"emb.item", 5000, sketch, 1}, {"emb.user", 50, exact, 2}};
  for (const auto& t : tables) {
    stats::TableIngestor ing(t.rows, t.cfg);
    stats::ZipfGenerator gen(t.rows, 1.05, t.rows);
    std::vector<int64_t> idx(300);
    for (int w = 0; w < 3; ++w) {
      gen.fill(idx.data(), idx.size());
      ing.add(idx.data(), idx.size());
      ing.close_window();
    }
    model::Table tab;
    tab.session_id = t.session;
    tab.name = t.name;
    tab.rows = t.rows;
    tab.dim = 16;
    tab.dtype = "fp32";
    tab.device = "cuda";
    tab.base_address = 0x7f0000000000ull + t.rows * 4096;
    tab.weight_bytes = t.rows * 16 * 4;
    tab.optimizer_bytes = 2 * tab.weight_bytes;
    tab.grad_bytes = tab.weight_bytes;
    tab.aggregate = ing.take_delta();
    p.tables.push_back(std::move(tab));
  }
  p.ties.push_back({1, "emb.user", "lm_head.weight"});
  p.memory_events.push_back({1, 10, 3200, 0x7f0000000000ull + 50 * 4096, 0, 0, "cudaMalloc", "emb.user"});
  p.memory_events.push_back({1, 20, 1 << 20, 0x7e0000000000ull, 7, 0, "cudaMallocAsync", ""});
  p.memory_events.push_back({1, 30, -(1 << 20), 0x7e0000000000ull, 7, 0, "cudaFreeAsync", ""});
  p.kernels.push_back({1, "embedding_bag_kernel<float>", 10, 12345, {"emb.user", "emb.item"}});
  p.ranges.push_back({1, "forward", 10, 99999, 600, 3200});
  p.metadata["edo_version"] = "0.1.0";
  return p;
}

// The template database's bytes, made once per process.
const std::string& template_bytes() {
  static const std::string bytes = [] {
    const std::string path = edo::fuzz::scratch_dir() + "/template.edodb";
    edo::fuzz::remove_database(path);
    {
      edo::model::Profile p = template_profile();
      edo::db::ProfileStore store(path, edo::db::ProfileStore::Mode::kCreate);
      store.save(p, true);
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& base = template_bytes();
  const std::string path = edo::fuzz::scratch_dir() + "/edited.edodb";
  edo::fuzz::remove_database(path);
  std::ofstream(path, std::ios::binary).write(base.data(), std::streamsize(base.size()));
  {
    SQLite::Database db(path, SQLite::OPEN_READWRITE);
    db.exec("PRAGMA synchronous=OFF");  // nothing here needs to survive a power cut
    Reader r{data, size};
    for (int edits = 0; edits < 16 && !r.empty(); ++edits) {
      try {
        apply_edit(db, r);
      } catch (const SQLite::Exception&) {
        // refused by SQLite (a constraint, a column that is already gone): next edit
      }
    }
  }
  edo::fuzz::read_side(path);
  return 0;
}
