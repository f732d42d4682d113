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
#include "recording_rows.h"
#include "schema.h"
#include "session_identity.h"
#include "table_extras.h"
#include "training_facts.h"

namespace edo::db {

using model::Profile;
using model::Session;
using model::Table;

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
    return q.executeStep() && q.getColumn("value").getString() == schema::kFormatTag;
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

  void save(Profile& p, bool with_summaries);
  // with_aggregates false: tables get an empty aggregate (load_outline()). for_viewing: see
  // load_for_viewing().
  // take: see load_each_table().
  Profile load(bool with_aggregates, const std::function<void(size_t, size_t)>& on_table, bool for_viewing = false,
               const std::function<void(const model::Table&)>* take = nullptr) const;
  std::map<int64_t, uint64_t> stored_lookups() const;

 private:
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
    save_metadata_rows(*impl_->db, entries);
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
    return impl_->db->execAndGet("SELECT COUNT(*) = COUNT(DISTINCT name) FROM tables").getInt() == 1;
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
  SQLite::Statement q(*db, select_sql(model::kTableStatisticsFields, {"table_id"}));
  const FieldReader reader(q, model::kTableStatisticsFields);
  while (q.executeStep()) {
    const int64_t id = q.getColumn("table_id").getInt64();
    model::StoredStatistics s;
    try {
      reader.read(q, s);
    } catch (const OutOfRange& e) {
      fail("table " + std::to_string(id) + ": " + e.what());
    }
    out[id] = s.lookups;
  }
  return out;
}

namespace {

// The table's derived summary and curves (table_summary, table_curves).
void save_summary(SQLite::Statement& put_summary, SQLite::Statement& put_curve, const model::Table& t) {
  const stats::TableSummary s = stats::summarize(t.aggregate);
  put_summary.reset();
  put_summary.bind(":table_id", t.id);
  if (s.zipf.valid) put_summary.bind(":zipf_alpha", s.zipf.alpha); else put_summary.bind(":zipf_alpha");
  if (s.zipf.valid) put_summary.bind(":zipf_fit_error", s.zipf.fit_error); else put_summary.bind(":zipf_fit_error");
  bind_fields(put_summary, s, model::kTableSummaryFields, 3);
  put_summary.exec();
  put_curve.reset();  // a statement binds only between runs
  put_curve.bind(":table_id", t.id);
  for (const auto& [kind, points] : {std::pair{"coverage", &s.coverage_curve}, std::pair{"lru", &s.lru_curve}, std::pair{"drift", &s.drift}}) {
    put_curve.reset();
    put_curve.bind(":kind", kind);
    insert_each(put_curve, model::kTableCurveFields, *points, 2);
  }
}

// A table's statistics: the serialized aggregate and its headline numbers (table_stats).
void save_statistics(SQLite::Statement& put_stats, const model::Table& t) {
  const std::string blob = t.aggregate.serialize();
  const model::StoredStatistics s{mode_name(t.aggregate.mode()), t.aggregate.lookups(), t.aggregate.unique_rows(),
                                  t.aggregate.out_of_range()};
  put_stats.reset();
  put_stats.bind(":table_id", t.id);
  put_stats.bindNoCopy(":aggregate", blob.data(), static_cast<int>(blob.size()));
  bind_fields(put_stats, s, model::kTableStatisticsFields, 2);
  put_stats.exec();
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
  SQLite::Statement put_table(d, upsert_sql(model::kRecordedTableFields, {"id", "session_id"}, "id"));
  SQLite::Statement put_stats(d, insert_sql(model::kTableStatisticsFields, {"table_id", "aggregate"}, "INSERT OR REPLACE"));
  SQLite::Statement del_summary(d, "DELETE FROM table_summary WHERE table_id = :table_id");
  SQLite::Statement del_curves(d, "DELETE FROM table_curves WHERE table_id = :table_id");
  SQLite::Statement put_summary(d, insert_sql(model::kTableSummaryFields, {"table_id", "zipf_alpha", "zipf_fit_error"}));
  SQLite::Statement put_curve(d, insert_sql(model::kTableCurveFields, {"table_id", "kind"}));
  for (const auto& t : p.tables) {
    if (!session_ids.count(t.session_id)) {
      throw DbError(path + ": internal error: table '" + t.name + "' refers to unknown session " + std::to_string(t.session_id));
    }
    put_table.reset();
    put_table.bind(":id", t.id);
    put_table.bind(":session_id", t.session_id);
    bind_fields(put_table, t, model::kRecordedTableFields, 2);
    put_table.exec();
    save_statistics(put_stats, t);
    for (SQLite::Statement* del : {&del_summary, &del_curves}) {
      del->reset();
      del->bind(":table_id", t.id);
      del->exec();
    }
    if (!with_summaries) continue;
    save_summary(put_summary, put_curve, t);
  }
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
  save_session_rows(d, p, session_ids);
  save_metadata_rows(d, p.metadata);
  save_table_extras(d, p);
  save_session_identity(d, p);
  save_first_seen(d, p);
  save_weight_snapshots(d, p, weights_written);
  save_training_facts(d, p);
  txn.commit();
}

// Tables and (with_aggregates) their statistics, handed to `take` one by one when given.
void ProfileStore::Impl::load_tables(SQLite::Database& d, Profile& p, bool with_aggregates, bool keep_samples,
                                     const std::function<void(size_t, size_t)>& on_table,
                                     const std::function<void(const model::Table&)>* take) const {
  const size_t total = on_table ? static_cast<size_t>(d.execAndGet("SELECT COUNT(*) FROM tables").getInt64()) : 0;
  // The outline skips the statistics blobs (NULL): reading them is most of a large file.
  SQLite::Statement q(d, "SELECT " + select_columns(model::kRecordedTableFields, {"id", "session_id"}, "t.") +
                             ", " + (with_aggregates ? "s.aggregate" : "NULL") +
                             " AS aggregate FROM tables t LEFT JOIN table_stats s ON s.table_id = t.id ORDER BY t.id");
  const FieldReader reader(q, model::kRecordedTableFields);
  while (q.executeStep()) {
    Table t;
    t.id = q.getColumn("id").getInt64();
    t.session_id = q.getColumn("session_id").getInt64();
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
  load_session_rows(d, p);
  load_metadata(d, p);
  load_table_extras(d, p);
  load_session_identity(d, p);
  load_first_seen(d, p);
  load_training_facts(d, p);
  return p;
}

}  // namespace edo::db
