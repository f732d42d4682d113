// ProfileStore: SQLite reading and writing of a Profile. See profile_store.h.
#include "edo/db/profile_store.h"

#include <fstream>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "edo/db/recording_state.h"
#include "edo/dtype.h"
#include "open_safely.h"
#include "edo/model/recording_fields.h"
#include "record_columns.h"
#include "schema.h"
#include "session_identity.h"
#include "table_extras.h"
#include "text_lines.h"
#include "training_facts.h"

namespace edo::db {

using model::KernelStat;
using model::MemoryEvent;
using model::Profile;
using model::RangeStat;
using model::Session;
using model::Table;
using model::Tie;

int current_schema_version() { return schema::kCurrentVersion; }

namespace {

// The name SQLite is given for the file `path`. SQLite gives some names a meaning of its own:
// ":memory:" is a private database in memory and "file:..." a URI (Debian's SQLite reads URI
// names) that may also mean memory or carry options. An edo path always names a file (a
// recording to ":memory:" must not vanish at exit): such a name gets "./" in front, which
// SQLite takes literally.
std::string sqlite_file_name(const std::string& path) {
  if (path == ":memory:" || path.rfind("file:", 0) == 0) return "./" + path;
  return path;
}

}  // namespace

bool is_edo_database(const std::string& path) {
  try {
    SQLite::Database db(sqlite_file_name(path), SQLite::OPEN_READONLY);
    harden_connection(db);
    if (!db.tableExists("edo_meta")) return false;
    SQLite::Statement q(db, "SELECT value FROM edo_meta WHERE key = 'format'");
    return q.executeStep() && q.getColumn(0).getString() == schema::kFormatTag;
  } catch (const std::exception&) {
    return false;
  }
}

bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::string(head, 16) == std::string("SQLite format 3\0", 16);
}

namespace {

std::string mode_name(stats::CountMode m) { return m == stats::CountMode::kExact ? "exact" : "sketch"; }

int64_t u64_to_i64(uint64_t v) { return static_cast<int64_t>(v); }  // bit pattern kept (addresses)
uint64_t i64_to_u64(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace

struct ProfileStore::Impl {
  std::string path;
  Mode mode;
  bool in_memory = false;
  // create_beside(): the file written (`path` is the output it becomes at publish()); removed
  // when the store goes without publish().
  std::string temp;
  std::unique_ptr<SQLite::Database> db;
  WrittenSnapshots weights_written;  // weight snapshot revisions this store has written

  [[noreturn]] void fail(const std::string& what) const {
    throw DbError(path + ": truncated or corrupt edo database (" + what +
                  "); re-record it or restore a copy");
  }

  // A new database's settings and tables (the file's journal mode is the caller's).
  void create_schema() {
    db->exec("PRAGMA foreign_keys=ON");
    SQLite::Transaction txn(*db);
    schema::create(*db);
    txn.commit();
  }

  // A count or size column (never negative, as edo writes it): a negative value is damage,
  // refused naming what holds it, never shown as 18446744073709551615.
  uint64_t count(const SQLite::Column& c, const std::string& what) const {
    const int64_t v = c.getInt64();
    if (v < 0) fail(what + " is " + std::to_string(v) + ", not a count");
    return static_cast<uint64_t>(v);
  }

  void save(Profile& p, bool with_summaries);
  // with_aggregates false: tables get an empty aggregate (load_outline()). for_viewing: see
  // load_for_viewing().
  // take: see load_each_table().
  Profile load(bool with_aggregates, const std::function<void(size_t, size_t)>& on_table, bool for_viewing = false,
               const std::function<void(const model::Table&)>* take = nullptr) const;
  std::map<int64_t, uint64_t> stored_lookups() const;

 private:
  void load_sessions(SQLite::Database& d, Profile& p) const;
  void load_tables(SQLite::Database& d, Profile& p, bool with_aggregates, bool keep_samples,
                   const std::function<void(size_t, size_t)>& on_table, const std::function<void(const model::Table&)>* take) const;
};

ProfileStore::ProfileStore(const std::string& path, Mode mode) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->mode = mode;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (mode != Mode::kCreate) {
    if (!fs::exists(path, ec)) {
      // `edo record` writes beside its output until the job ends: say where, so that a live
      // recording (or one whose edo record was killed) is found.
      const std::vector<std::string> live = recording_files_for(path);
      if (!live.empty())
        throw DbError(path + ": no such file yet; edo record writes it to " + live.back() +
                      " until the job ends (read that file to see the recording so far)");
      throw DbError(path + ": no such file; record one with 'edo record' or 'edo synth'");
    }
    if (fs::is_directory(path, ec)) throw DbError(path + ": is a directory, not an edo database");
    if (fs::file_size(path, ec) == 0) throw DbError(path + ": empty file, not an edo database (was the recording interrupted before its first save?)");
    if (::access(path.c_str(), R_OK) != 0 && errno == EACCES) {
      throw DbError(path + ": permission denied (cannot read the file); make it readable or copy it");
    }
  } else {
    auto parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
      throw DbError(path + ": folder " + parent.string() + " does not exist; create it or choose another -o path");
    }
    // Replace an existing file (and its WAL side files) atomically enough for a CLI tool.
    // Whether a file may be replaced at all is the caller's decision (edo refuses to replace
    // anything that is not an edo database).
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      throw DbError(path + ": cannot replace the existing file (" + ec.message() +
                    "); check the permissions of its folder or choose another -o path");
    }
    // Create the file ourselves first: SQLite's own error for an unwritable place is "unable
    // to open database file", which does not say why.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      const std::string folder = parent.empty() ? std::string(".") : parent.string();
      throw DbError(path + ": cannot create the file: " + std::strerror(err) +
                    (err == EACCES || err == EPERM ? " (the folder " + folder + " is not writable)" : std::string()) +
                    "; choose another -o path");
    }
    ::close(fd);
  }
  try {
    int flags = mode == Mode::kReadOnly ? SQLite::OPEN_READONLY
                : mode == Mode::kReadWrite ? SQLite::OPEN_READWRITE
                                           : (SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    impl_->db = std::make_unique<SQLite::Database>(sqlite_file_name(path), flags, /*busy timeout ms*/ 5000);
    harden_connection(*impl_->db);
    if (mode == Mode::kCreate) {
      impl_->db->exec("PRAGMA journal_mode=WAL");
      impl_->db->exec("PRAGMA synchronous=NORMAL");
      impl_->create_schema();
      return;
    }
    // Another SQLite file is "not an edo database"; an edo database that carries SQL of its own
    // is refused before anything else is read from it (the connection runs no trigger or view).
    int version = schema::read_version(*impl_->db, path);
    check_schema_objects(*impl_->db, path);
    if (version > schema::kCurrentVersion) {
      throw DbError(path + ": written by a newer edo (schema " + std::to_string(version) + " > " +
                    std::to_string(schema::kCurrentVersion) + "); upgrade edo to read it");
    }
    if (version < 1) impl_->fail("schema version " + std::to_string(version));
    if (version < schema::kCurrentVersion) {
      // Older files are upgraded in place, also when opened for reading.
      try {
        SQLite::Database writer(sqlite_file_name(path), SQLite::OPEN_READWRITE, 5000);
        harden_connection(writer);
        SQLite::Transaction txn(writer);
        schema::migrate(writer, version);
        txn.commit();
      } catch (const SQLite::Exception& e) {
        const int code = e.getErrorCode() & 0xff;  // primary result code
        if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM || code == SQLITE_IOERR)
          throw DbError(path + ": written by an older edo (schema " + std::to_string(version) +
                        "), and the one-time upgrade to schema " + std::to_string(schema::kCurrentVersion) +
                        " could not be written (" + e.what() + "); make the file and its folder writable, or copy it");
        impl_->fail("the upgrade from schema " + std::to_string(version) + " failed: " + e.what());
      }
    }
    if (mode == Mode::kReadWrite) impl_->db->exec("PRAGMA foreign_keys=ON");
  } catch (const DbError&) {
    throw;
  } catch (const SQLite::Exception& e) {
    std::string what = e.what();
    if (mode == Mode::kCreate) {
      throw DbError(path + ": cannot create an edo database (" + what +
                    "); check that the file's folder is writable and has free space, or choose another -o path");
    }
    if (what.find("not a database") != std::string::npos) {
      throw DbError(path + ": not an edo database (not an SQLite file); record one with 'edo record' or 'edo synth'");
    }
    impl_->fail(what);
  }
}

ProfileStore::ProfileStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProfileStore ProfileStore::in_memory() {
  auto impl = std::make_unique<Impl>();
  impl->path = "(in memory)";
  impl->mode = Mode::kCreate;
  impl->in_memory = true;
  try {
    impl->db = std::make_unique<SQLite::Database>(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    harden_connection(*impl->db);
    impl->create_schema();
  } catch (const SQLite::Exception& e) {
    throw DbError(std::string("cannot create an edo database in memory (") + e.what() + ")");
  }
  return ProfileStore(std::move(impl));
}

ProfileStore::~ProfileStore() {
  if (!impl_ || !impl_->db || impl_->mode == Mode::kReadOnly || impl_->in_memory) return;
  if (!impl_->temp.empty()) {
    // Never published (the work failed): the half-written file goes, the output is untouched.
    impl_->db.reset();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(impl_->temp + suffix, ec);
    return;
  }
  // Leave a single self-contained file behind: fold the WAL back in.
  try {
    impl_->db->exec("PRAGMA journal_mode=DELETE");
  } catch (const std::exception&) {
    // Another reader holds the file; the WAL stays beside it and SQLite reads it.
  }
}

ProfileStore ProfileStore::create_beside(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string temp =
      (p.parent_path() / ("." + p.filename().string() + ".edo-writing-" + std::to_string(::getpid()))).string();
  std::unique_ptr<ProfileStore> store;
  try {
    store = std::make_unique<ProfileStore>(temp, Mode::kCreate);
  } catch (const DbError& e) {
    const std::string what = e.what();  // said of the output the user named (the folder is the same)
    if (what.rfind(temp, 0) != 0) throw;
    throw DbError(path + what.substr(temp.size()));
  }
  store->impl_->temp = temp;
  store->impl_->path = path;
  return std::move(*store);
}

void ProfileStore::publish() {
  if (impl_->temp.empty() || !impl_->db) return;
  try {
    impl_->db->exec("PRAGMA journal_mode=DELETE");  // one self-contained file
  } catch (const SQLite::Exception& e) {
    throw DbError(impl_->path + ": cannot write: " + write_failure(*impl_->db, e));
  }
  impl_->db.reset();
  std::error_code ec;
  // The replaced file's own log must not be read with the new file.
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(impl_->path + suffix, ec);
  if (::rename(impl_->temp.c_str(), impl_->path.c_str()) != 0) {
    const int err = errno;
    std::filesystem::remove(impl_->temp, ec);
    impl_->temp.clear();
    throw DbError(impl_->path + ": cannot write: " + std::strerror(err) + "; choose another -o path");
  }
  impl_->temp.clear();
}

ProfileStore::ProfileStore(ProfileStore&&) noexcept = default;
ProfileStore& ProfileStore::operator=(ProfileStore&&) noexcept = default;

const std::string& ProfileStore::path() const { return impl_->path; }
SQLite::Database& ProfileStore::database() const { return *impl_->db; }
ProfileStore::Mode ProfileStore::mode() const { return impl_->mode; }

void ProfileStore::save(Profile& profile, bool with_summaries) {
  if (impl_->mode == Mode::kReadOnly) throw DbError(impl_->path + ": opened read-only, cannot save");
  try {
    impl_->save(profile, with_summaries);
  } catch (const DbError&) {
    throw;
  } catch (const SQLite::Exception& e) {
    throw DbError(impl_->path + ": cannot write: " + write_failure(*impl_->db, e));
  }
}

void ProfileStore::save_metadata(const std::map<std::string, std::string>& entries) {
  if (impl_->mode == Mode::kReadOnly) throw DbError(impl_->path + ": opened read-only, cannot save");
  try {
    SQLite::Transaction txn(*impl_->db);
    SQLite::Statement put(*impl_->db, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
    for (const auto& [key, value] : entries) {
      put.reset();
      put.bind(1, key);
      put.bind(2, value);
      put.exec();
    }
    txn.commit();
  } catch (const SQLite::Exception& e) {
    throw DbError(impl_->path + ": cannot write: " + write_failure(*impl_->db, e));
  }
}

Profile ProfileStore::load() const { return load(std::function<void(size_t, size_t)>()); }

Profile ProfileStore::load(const std::function<void(size_t done, size_t total)>& on_table) const {
  try {
    return impl_->load(true, on_table);
  } catch (const DbError& e) {
    if (std::string(e.what()).rfind(impl_->path + ":", 0) == 0) throw;
    impl_->fail(e.what());  // damage found by a part that does not know the file's name
  } catch (const SQLite::Exception& e) {
    impl_->fail(e.what());
  }
}

Profile ProfileStore::load_for_viewing(const std::function<void(size_t done, size_t total)>& on_table) const {
  try {
    return impl_->load(true, on_table, true);
  } catch (const DbError& e) {
    if (std::string(e.what()).rfind(impl_->path + ":", 0) == 0) throw;
    impl_->fail(e.what());  // damage found by a part that does not know the file's name
  } catch (const SQLite::Exception& e) {
    impl_->fail(e.what());
  }
}

Profile ProfileStore::load_each_table(const std::function<void(const model::Table&)>& take) const {
  try {
    return impl_->load(true, {}, true, &take);
  } catch (const DbError& e) {
    if (std::string(e.what()).rfind(impl_->path + ":", 0) == 0) throw;
    impl_->fail(e.what());  // damage found by a part that does not know the file's name
  } catch (const SQLite::Exception& e) {
    impl_->fail(e.what());
  }
}

bool ProfileStore::table_names_distinct() const {
  try {
    SQLite::Statement q(*impl_->db, "SELECT COUNT(*) = COUNT(DISTINCT name) FROM tables");
    return q.executeStep() && q.getColumn(0).getInt() == 1;
  } catch (const SQLite::Exception& e) {
    impl_->fail(e.what());
  }
}

ProfileStore::Outline ProfileStore::load_outline() const {
  try {
    Outline o;
    o.profile = impl_->load(false, {});
    o.lookups_by_table = impl_->stored_lookups();
    return o;
  } catch (const DbError& e) {
    if (std::string(e.what()).rfind(impl_->path + ":", 0) == 0) throw;
    impl_->fail(e.what());
  } catch (const SQLite::Exception& e) {
    impl_->fail(e.what());
  }
}

std::map<int64_t, uint64_t> ProfileStore::Impl::stored_lookups() const {
  std::map<int64_t, uint64_t> out;
  SQLite::Statement q(*db, "SELECT table_id, lookups FROM table_stats");
  while (q.executeStep())
    out[q.getColumn(0).getInt64()] = count(q.getColumn(1), "table " + std::to_string(q.getColumn(0).getInt64()) + ": lookups");
  return out;
}

namespace {

// Sessions (updated in place) and their drop counters (replaced).
void save_sessions(SQLite::Database& d, const Profile& p) {
  SQLite::Statement put_session(d,
      "INSERT INTO sessions(id, command, host, pid, parent_pid, rank, local_rank,"
      " start_unix_ns, duration_ns, exit_code, gpus, source, dropped_events, steps)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET"
      " command=excluded.command, host=excluded.host, pid=excluded.pid, parent_pid=excluded.parent_pid,"
      " rank=excluded.rank, local_rank=excluded.local_rank, start_unix_ns=excluded.start_unix_ns,"
      " duration_ns=excluded.duration_ns, exit_code=excluded.exit_code, gpus=excluded.gpus,"
      " source=excluded.source, dropped_events=excluded.dropped_events, steps=excluded.steps");
  for (const auto& s : p.sessions) {
    put_session.reset();
    put_session.clearBindings();
    put_session.bind(1, s.id);
    put_session.bind(2, s.command);
    put_session.bind(3, s.host);
    put_session.bind(4, s.pid);
    put_session.bind(5, s.parent_pid);
    if (s.rank) put_session.bind(6, *s.rank); else put_session.bind(6);
    if (s.local_rank) put_session.bind(7, *s.local_rank); else put_session.bind(7);
    put_session.bind(8, s.start_unix_ns);
    put_session.bind(9, s.duration_ns);
    if (s.exit_code) put_session.bind(10, *s.exit_code); else put_session.bind(10);
    put_session.bind(11, s.gpus);
    put_session.bind(12, s.source);
    put_session.bind(13, u64_to_i64(s.dropped_events));
    put_session.bind(14, u64_to_i64(s.steps));
    put_session.exec();
  }
  SQLite::Statement del_drops(d, "DELETE FROM session_drops WHERE session_id = ?");
  SQLite::Statement put_drop(d, "INSERT INTO session_drops(session_id, name, count) VALUES (?,?,?)");
  for (const auto& s : p.sessions) {
    del_drops.reset();
    del_drops.bind(1, s.id);
    del_drops.exec();
    for (const auto& [name, n] : s.drops) {
      put_drop.reset();
      put_drop.bind(1, s.id);
      put_drop.bind(2, name);
      put_drop.bind(3, u64_to_i64(n));
      put_drop.exec();
    }
  }
}

// The table's derived summary and curves (table_summary, table_curves).
void save_summary(SQLite::Statement& put_summary, SQLite::Statement& put_curve, const model::Table& t) {
  const stats::TableSummary s = stats::summarize(t.aggregate);
  put_summary.reset();
  put_summary.bind(1, t.id);
  if (s.zipf.valid) put_summary.bind(2, s.zipf.alpha); else put_summary.bind(2);
  if (s.zipf.valid) put_summary.bind(3, s.zipf.fit_error); else put_summary.bind(3);
  put_summary.bind(4, s.coverage_top_0_1pct);
  put_summary.bind(5, s.coverage_top_1pct);
  put_summary.bind(6, s.coverage_top_10pct);
  put_summary.bind(7, s.lru_hit_rate_1pct);
  put_summary.bind(8, s.lru_hit_rate_10pct);
  put_summary.bind(9, s.lru_hit_rate_50pct);
  put_summary.bind(10, s.lru_hit_rate_100pct);
  put_summary.bind(11, s.mean_drift_jaccard);
  put_summary.exec();
  auto put_points = [&](const char* kind, const std::vector<stats::CurvePoint>& pts) {
    for (const auto& pt : pts) {
      put_curve.reset();
      put_curve.bind(1, t.id);
      put_curve.bind(2, kind);
      put_curve.bind(3, pt.x);
      put_curve.bind(4, pt.y);
      put_curve.exec();
    }
  };
  put_points("coverage", s.coverage_curve);
  put_points("lru", s.lru_curve);
  put_points("drift", s.drift);
}

// Tables (updated in place; new ones get ids), their statistics, and with_summaries their
// derived summaries.
void save_tables(SQLite::Database& d, Profile& p, const std::set<int64_t>& session_ids, bool with_summaries,
                 const std::string& path) {
  int64_t next_table_id = d.execAndGet("SELECT COALESCE(MAX(id), 0) FROM tables").getInt64() + 1;
  for (auto& t : p.tables) {
    if (t.id <= 0) t.id = next_table_id++;
    else next_table_id = std::max(next_table_id, t.id + 1);
  }
  SQLite::Statement put_table(d, upsert_sql(model::kRecordedTableFields, {"id", "session_id", "base_address"}, "id"));
  SQLite::Statement put_stats(d,
      "INSERT OR REPLACE INTO table_stats(table_id, counts_mode, lookups, unique_rows, out_of_range,"
      " aggregate) VALUES (?,?,?,?,?,?)");
  SQLite::Statement del_summary(d, "DELETE FROM table_summary WHERE table_id = ?");
  SQLite::Statement del_curves(d, "DELETE FROM table_curves WHERE table_id = ?");
  SQLite::Statement put_summary(d,
      "INSERT INTO table_summary(table_id, zipf_alpha, zipf_fit_error, coverage_top_0_1pct,"
      " coverage_top_1pct, coverage_top_10pct, lru_hit_1pct, lru_hit_10pct, lru_hit_50pct,"
      " lru_hit_100pct, mean_drift_jaccard) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  SQLite::Statement put_curve(d, "INSERT INTO table_curves(table_id, kind, x, y) VALUES (?,?,?,?)");
  for (const auto& t : p.tables) {
    if (!session_ids.count(t.session_id)) {
      throw DbError(path + ": internal error: table '" + t.name + "' refers to unknown session " + std::to_string(t.session_id));
    }
    put_table.reset();
    put_table.bind(1, t.id);
    put_table.bind(2, t.session_id);
    put_table.bind(3, u64_to_i64(t.base_address));
    bind_fields(put_table, t, model::kRecordedTableFields, 3);
    put_table.exec();

    const std::string blob = t.aggregate.serialize();
    put_stats.reset();
    put_stats.bind(1, t.id);
    put_stats.bind(2, mode_name(t.aggregate.mode()));
    put_stats.bind(3, u64_to_i64(t.aggregate.lookups()));
    put_stats.bind(4, u64_to_i64(t.aggregate.unique_rows()));
    put_stats.bind(5, u64_to_i64(t.aggregate.out_of_range()));
    put_stats.bindNoCopy(6, blob.data(), static_cast<int>(blob.size()));
    put_stats.exec();

    del_summary.reset();
    del_summary.bind(1, t.id);
    del_summary.exec();
    del_curves.reset();
    del_curves.bind(1, t.id);
    del_curves.exec();
    if (!with_summaries) continue;
    save_summary(put_summary, put_curve, t);
  }
}

// Per-session collections, replaced wholesale: ties, memory events, kernels, ranges.
void save_session_collections(SQLite::Database& d, const Profile& p, const std::set<int64_t>& session_ids) {
  for (int64_t sid : session_ids) {
    for (const char* table : {"ties", "memory_events", "kernels", "kernel_tables", "ranges"}) {
      SQLite::Statement del(d, std::string("DELETE FROM ") + table + " WHERE session_id = ?");
      del.bind(1, sid);
      del.exec();
    }
  }
  SQLite::Statement put_tie(d, "INSERT OR IGNORE INTO ties(session_id, table_name, tied_with) VALUES (?,?,?)");
  for (const auto& tie : p.ties) {
    put_tie.reset();
    put_tie.bind(1, tie.session_id);
    put_tie.bind(2, tie.table);
    put_tie.bind(3, tie.tied_with);
    put_tie.exec();
  }
  SQLite::Statement put_event(d,
      "INSERT INTO memory_events(session_id, time_ns, bytes, address, stream, device, kind, table_name)"
      " VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& e : p.memory_events) {
    put_event.reset();
    put_event.bind(1, e.session_id);
    put_event.bind(2, e.time_ns);
    put_event.bind(3, e.bytes);
    put_event.bind(4, u64_to_i64(e.address));
    put_event.bind(5, u64_to_i64(e.stream));
    put_event.bind(6, e.device);
    put_event.bind(7, e.kind);
    put_event.bind(8, e.table);
    put_event.exec();
  }
  SQLite::Statement put_kernel(d,
      "INSERT INTO kernels(session_id, name, launches, total_ns, tables) VALUES (?,?,?,?,?)");
  for (const auto& k : p.kernels) {
    put_kernel.reset();
    put_kernel.bind(1, k.session_id);
    put_kernel.bind(2, k.name);
    put_kernel.bind(3, u64_to_i64(k.launches));
    put_kernel.bind(4, u64_to_i64(k.total_ns));
    put_kernel.bind(5, join_lines(k.tables));
    put_kernel.exec();
  }
  SQLite::Statement put_kernel_table(d, insert_sql(model::kKernelTableFields, {"session_id", "kernel"}));
  for (const auto& k : p.kernels) {
    for (const auto& t : k.per_table) {
      put_kernel_table.reset();
      put_kernel_table.bind(1, k.session_id);
      put_kernel_table.bind(2, k.name);
      bind_fields(put_kernel_table, t, model::kKernelTableFields, 2);
      put_kernel_table.exec();
    }
  }
  insert_rows(d, model::kRangeFields, p.ranges, {});
}

}  // namespace

void ProfileStore::Impl::save(Profile& p, bool with_summaries) {
  SQLite::Database& d = *db;
  std::set<int64_t> session_ids;
  for (const auto& s : p.sessions) {
    if (s.id <= 0) throw DbError(path + ": internal error: session without an id");
    if (!session_ids.insert(s.id).second) throw DbError(path + ": internal error: duplicate session id " + std::to_string(s.id));
  }
  SQLite::Transaction txn(d);
  save_sessions(d, p);
  save_tables(d, p, session_ids, with_summaries, path);
  save_session_collections(d, p, session_ids);
  SQLite::Statement put_meta(d, "INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)");
  for (const auto& [key, value] : p.metadata) {
    put_meta.reset();
    put_meta.bind(1, key);
    put_meta.bind(2, value);
    put_meta.exec();
  }
  save_table_extras(d, p);
  save_session_identity(d, p);
  save_first_seen(d, p);
  save_weight_snapshots(d, p, weights_written);
  save_training_facts(d, p);
  txn.commit();
}

// Sessions and their drop counters.
void ProfileStore::Impl::load_sessions(SQLite::Database& d, Profile& p) const {
  {
    SQLite::Statement q(d,
        "SELECT id, command, host, pid, parent_pid, rank, local_rank, start_unix_ns, duration_ns,"
        " exit_code, gpus, source, dropped_events, steps FROM sessions ORDER BY id");
    while (q.executeStep()) {
      Session s;
      s.id = q.getColumn(0).getInt64();
      s.command = q.getColumn(1).getString();
      s.host = q.getColumn(2).getString();
      s.pid = q.getColumn(3).getInt64();
      s.parent_pid = q.getColumn(4).getInt64();
      if (!q.getColumn(5).isNull()) s.rank = q.getColumn(5).getInt64();
      if (!q.getColumn(6).isNull()) s.local_rank = q.getColumn(6).getInt64();
      s.start_unix_ns = q.getColumn(7).getInt64();
      s.duration_ns = q.getColumn(8).getInt64();
      if (!q.getColumn(9).isNull()) s.exit_code = q.getColumn(9).getInt();
      s.gpus = q.getColumn(10).getString();
      s.source = q.getColumn(11).getString();
      const std::string who = "session " + std::to_string(s.id) + " (pid " + std::to_string(s.pid) + ")";
      s.dropped_events = count(q.getColumn(12), who + ": dropped_events");
      s.steps = count(q.getColumn(13), who + ": steps");
      p.sessions.push_back(std::move(s));
    }
  }
  {
    std::map<int64_t, Session*> by_id;
    for (auto& s : p.sessions) by_id[s.id] = &s;
    SQLite::Statement q(d, "SELECT session_id, name, count FROM session_drops ORDER BY session_id, name");
    while (q.executeStep()) {
      auto it = by_id.find(q.getColumn(0).getInt64());
      if (it != by_id.end())
        it->second->drops[q.getColumn(1).getString()] =
            count(q.getColumn(2), "session " + std::to_string(it->first) + ": drop count " + q.getColumn(1).getString());
    }
  }
}

// Tables and (with_aggregates) their statistics, handed to `take` one by one when given.
void ProfileStore::Impl::load_tables(SQLite::Database& d, Profile& p, bool with_aggregates, bool keep_samples,
                                     const std::function<void(size_t, size_t)>& on_table,
                                     const std::function<void(const model::Table&)>* take) const {
  const size_t total = on_table ? static_cast<size_t>(d.execAndGet("SELECT COUNT(*) FROM tables").getInt64()) : 0;
  // The outline skips the statistics blobs (NULL): reading them is most of a large file.
  SQLite::Statement q(d, "SELECT " + select_columns(model::kRecordedTableFields, {"id", "session_id", "base_address"}, "t.") +
                             ", " + (with_aggregates ? "s.aggregate" : "NULL") +
                             " AS aggregate FROM tables t LEFT JOIN table_stats s ON s.table_id = t.id ORDER BY t.id");
  const FieldReader reader(q, model::kRecordedTableFields);
  while (q.executeStep()) {
    Table t;
    t.id = q.getColumn("id").getInt64();
    t.session_id = q.getColumn("session_id").getInt64();
    t.base_address = i64_to_u64(q.getColumn("base_address").getInt64());
    try {
      reader.read(q, t);
    } catch (const OutOfRange& e) {
      fail("table '" + t.name + "': " + e.what());
    }
    // Databases written before the one dtype vocabulary hold "f32", "f16", "i8", "f8e4m3"...:
    // read every spelling as its name in edo/dtype.h.
    t.dtype = std::string(canonical_dtype_name(t.dtype));
    SQLite::Column blob = q.getColumn("aggregate");
    if (!with_aggregates) {
      // Empty, of no shape: a shaped empty aggregate of a sketched table allocates its sketch.
      t.aggregate = stats::TableAggregate();
    } else if (blob.isNull()) {
      t.aggregate = stats::TableAggregate(t.rows, stats::StatsConfig{});
    } else {
      std::string_view bytes(static_cast<const char*>(blob.getBlob()), static_cast<size_t>(blob.getBytes()));
      if (!stats::TableAggregate::deserialize_lazily(bytes, t.aggregate, keep_samples)) {
        fail("statistics of table '" + t.name + "' do not decode");
      }
    }
    if (take) {
      (*take)(t);
      t.aggregate = stats::TableAggregate();
    }
    p.tables.push_back(std::move(t));
    if (on_table) on_table(p.tables.size(), std::max(total, p.tables.size()));
  }
}

Profile ProfileStore::Impl::load(bool with_aggregates, const std::function<void(size_t, size_t)>& on_table,
                                 bool for_viewing, const std::function<void(const model::Table&)>* take) const {
  SQLite::Database& d = *db;
  Profile p;
  load_sessions(d, p);
  // The union LRU, a viewer's only use of the ordered samples, needs two ranks.
  // A reader that takes each table's statistics as they come (take) builds no union LRU.
  const bool keep_samples =
      !for_viewing || (!take && std::count_if(p.sessions.begin(), p.sessions.end(),
                                               [](const Session& s) { return s.rank.has_value(); }) >= 2);
  load_tables(d, p, with_aggregates, keep_samples, on_table, take);
  {
    SQLite::Statement q(d, "SELECT session_id, table_name, tied_with FROM ties ORDER BY rowid");
    while (q.executeStep()) {
      p.ties.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getString(), q.getColumn(2).getString()});
    }
  }
  {
    SQLite::Statement q(d,
        "SELECT session_id, time_ns, bytes, address, stream, device, kind, table_name FROM memory_events"
        " ORDER BY session_id, time_ns, rowid");
    while (q.executeStep()) {
      MemoryEvent e;
      e.session_id = q.getColumn(0).getInt64();
      e.time_ns = q.getColumn(1).getInt64();
      e.bytes = q.getColumn(2).getInt64();
      e.address = i64_to_u64(q.getColumn(3).getInt64());
      e.stream = i64_to_u64(q.getColumn(4).getInt64());
      e.device = q.getColumn(5).getInt();
      e.kind = q.getColumn(6).getString();
      e.table = q.getColumn(7).getString();
      p.memory_events.push_back(std::move(e));
    }
  }
  {
    SQLite::Statement q(d, "SELECT session_id, name, launches, total_ns, tables FROM kernels ORDER BY rowid");
    while (q.executeStep()) {
      KernelStat k;
      k.session_id = q.getColumn(0).getInt64();
      k.name = q.getColumn(1).getString();
      k.launches = i64_to_u64(q.getColumn(2).getInt64());
      k.total_ns = i64_to_u64(q.getColumn(3).getInt64());
      k.tables = split_lines(q.getColumn(4).getString(), /*keep_empty=*/false);
      p.kernels.push_back(std::move(k));
    }
    std::map<std::pair<int64_t, std::string>, size_t> kernel_at;
    for (size_t i = 0; i < p.kernels.size(); ++i) kernel_at.emplace(std::make_pair(p.kernels[i].session_id, p.kernels[i].name), i);
    SQLite::Statement qt(d, select_sql(model::kKernelTableFields, {"session_id", "kernel"}) + " ORDER BY rowid");
    const FieldReader reader(qt, model::kKernelTableFields);
    while (qt.executeStep()) {
      auto it = kernel_at.find({qt.getColumn("session_id").getInt64(), qt.getColumn("kernel").getString()});
      if (it == kernel_at.end()) continue;  // a row without its kernel: nothing to attach it to
      reader.read(qt, p.kernels[it->second].per_table.emplace_back());
    }
  }
  {
    SQLite::Statement q(d, select_sql(model::kRangeFields, {}) + " ORDER BY rowid");
    const FieldReader reader(q, model::kRangeFields);
    while (q.executeStep()) reader.read(q, p.ranges.emplace_back());
  }
  {
    SQLite::Statement q(d, "SELECT key, value FROM metadata");
    while (q.executeStep()) p.metadata[q.getColumn(0).getString()] = q.getColumn(1).getString();
  }
  load_table_extras(d, p);
  load_session_identity(d, p);
  load_first_seen(d, p);
  load_training_facts(d, p);
  return p;
}

}  // namespace edo::db
