// See open_safely.h.
#include "open_safely.h"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "edo/db/profile_store.h"
#include "schema.h"

namespace edo::db {

void harden_connection(SQLite::Database& db) {
  sqlite3* h = db.getHandle();
  sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  // edo creates no trigger and no view: none may run, whatever check_schema_objects missed.
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_enable_load_extension(h, 0);
}

namespace {

using Objects = std::set<std::pair<std::string, std::string>>;  // (type, name)

// What edo's schema creates: the current schema (made once in memory), plus what an older file
// may hold before its migration (the version-1 placeholder tune tables, renamed *_v1 when they
// held rows).
const Objects& known_objects() {
  static const Objects known = [] {
    Objects o;
    SQLite::Database mem(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    schema::create(mem);
    SQLite::Statement q(mem, "SELECT type, name FROM sqlite_master");
    while (q.executeStep()) o.emplace(q.getColumn("type").getString(), q.getColumn("name").getString());
    for (const char* t : {"tune_candidates_v1", "tune_plans_v1"}) o.emplace("table", t);
    return o;
  }();
  return known;
}

}  // namespace

void check_schema_objects(SQLite::Database& db, const std::string& path) {
  const Objects& known = known_objects();
  SQLite::Statement q(db, "SELECT type, name FROM sqlite_master ORDER BY type, name");
  std::string strangers;
  int n = 0;
  while (q.executeStep()) {
    const std::string type = q.getColumn("type").getString(), name = q.getColumn("name").getString();
    if (known.count({type, name})) continue;
    // SQLite's own: the index of a UNIQUE/PRIMARY KEY constraint, ANALYZE's statistics.
    if ((type == "index" || type == "table") && name.rfind("sqlite_", 0) == 0) continue;
    if (++n <= 3) strangers += (strangers.empty() ? "" : ", ") + type + " " + name;
  }
  if (n == 0) return;
  if (n > 3) strangers += " and " + std::to_string(n - 3) + " more";
  throw DbError(path + ": holds SQL objects edo did not create (" + strangers +
                "); not opened: it may run code on write — copy the data you trust into a new recording");
}

std::string write_failure(SQLite::Database& db, const SQLite::Exception& e) {
  const int primary = e.getErrorCode() & 0xff;
  std::string what = e.what();
  // Not about the disk: SQLite refused the statement (not authorized, a constraint, a damaged
  // or locked file). Saying so, not "check free disk space", is what lets the user act on it.
  if (primary == SQLITE_AUTH || what.find("not authorized") != std::string::npos)
    return "SQLite refused the write (" + what + "): the file asks for something edo does not allow; copy the data you "
           "trust into a new recording";
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    return "the file is damaged (" + what + "); re-record it or restore a copy";
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return "the file is locked by another process (" + what + "); try again when it is done";
  if (primary == SQLITE_CONSTRAINT || primary == SQLITE_MISMATCH || primary == SQLITE_RANGE)
    return "SQLite refused the write (" + what + "); the file's tables are not the ones edo wrote: re-record it";
  // SQLite reports a full disk as SQLITE_FULL without keeping the errno.
  if (primary == SQLITE_FULL) return "the disk is full (" + what + "); free some space";
  const int err = sqlite3_system_errno(db.getHandle());
  switch (err) {
    case ENOSPC: return "the disk is full (" + std::string(std::strerror(err)) + "); free some space";
    case EDQUOT: return "the disk quota is used up (" + std::string(std::strerror(err)) + "); free some space";
    case EFBIG: return "the file size limit is reached (" + std::string(std::strerror(err)) + "; see ulimit -f)";
    case EROFS: return "the file system is read-only";
    case EACCES:
    case EPERM: return "permission denied";
    default: break;
  }
  const bool disk = primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY ||
                    primary == SQLITE_PERM || primary == SQLITE_TOOBIG || primary == SQLITE_NOMEM;
  if (!disk && primary != SQLITE_ERROR) return "SQLite refused the write (" + what + ")";
  if (err != 0) what += std::string(": ") + std::strerror(err);
  // Some failing calls (growing the WAL index) leave no errno behind; a file size limit is
  // then the likely cause when one is set.
  rlimit fsize{};
  if (err == 0 && getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
    return what + " (the file size limit is reached? ulimit -f is " + std::to_string(fsize.rlim_cur) + " bytes)";
  if (!disk) return "SQLite refused the write (" + what + ")";
  return what + "; check free disk space and permissions";
}

}  // namespace edo::db
