// Reading and writing a Profile to an .edodb file (SQLite through SQLiteCpp, WAL mode).
//
// Errors are reported as edo::db::DbError with a one-line message that names the file and
// the fix ("not an edo database", "written by a newer edo (schema 7 > 3): upgrade edo",
// "truncated or corrupt: ..."), never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "edo/model/profile.h"

namespace SQLite {
class Database;
}

namespace edo::db {

class DbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The schema version this build writes and the oldest it migrates forward.
int current_schema_version();

// True when `path` is a readable SQLite file marked as an edo database (any schema version).
// Reads only: never migrates or writes. Used before replacing a file.
bool is_edo_database(const std::string& path);

// True when `path` starts with SQLite's file header (an .edodb, or another SQLite file): how a
// command tells a recording from a JSON/YAML plan file before it opens either.
bool is_sqlite_file(const std::string& path);

class ProfileStore {
 public:
  enum class Mode { kReadOnly, kReadWrite, kCreate /* new file, replaces an existing one */ };

  // Opens (and for kCreate creates) the file; validates that it is an edo database of a
  // schema this build understands, migrating older schemas forward in kReadWrite mode.
  // `path` always names a file, also when SQLite would read it otherwise (":memory:", a
  // "file:" URI): those are opened as the file of that name in the current folder.
  ProfileStore(const std::string& path, Mode mode);
  // A new, empty database that lives in memory only and is gone with the store (checks and
  // tests that need a database but no file). path() is "(in memory)"; mode() is kCreate.
  static ProfileStore in_memory();
  // A new database for `path` written beside it (".NAME.edo-writing-PID" in its folder) and
  // renamed over it by publish(): `path` is replaced only whole, never left empty or half
  // written, and two writers of one path leave the one that published last (issue 30 §4).
  // Messages name `path`. Going without publish() removes the file written. Whether `path` may
  // be replaced is the caller's decision (cli/support/output_file.h).
  static ProfileStore create_beside(const std::string& path);
  // create_beside(): closes the database and renames it over its path (no-op otherwise). The
  // store is closed afterwards.
  void publish();
  ~ProfileStore();
  ProfileStore(ProfileStore&&) noexcept;
  ProfileStore& operator=(ProfileStore&&) noexcept;

  const std::string& path() const;

  // Writes the whole profile in one transaction. Session ids are chosen by whoever builds
  // the profile (unique, > 0; throws DbError otherwise); tables with id 0 get an id assigned
  // (written back into `profile`). Rows with an existing id are replaced in place, so the
  // collector can call this repeatedly as deltas arrive and a job that dies leaves
  // everything received so far. Ties, memory events, kernels and ranges of the saved
  // sessions are replaced. With `with_summaries`, derived statistics (coverage, Zipf fit,
  // LRU and drift curves) are computed and stored too (slower: do it for the final save).
  void save(model::Profile& profile, bool with_summaries = true);

  // Sets metadata keys (and nothing else) in one transaction: `edo record`'s "still running"
  // mark between saves of an unchanged profile.
  void save_metadata(const std::map<std::string, std::string>& entries);

  // Reads everything back, except weight snapshots (large; weight_store.h reads them).
  model::Profile load() const;
  // The same, calling on_table(done, total) after each table's statistics are decoded (a
  // viewer's progress bar). on_table may throw to abandon the load; the exception propagates.
  model::Profile load(const std::function<void(size_t done, size_t total)>& on_table) const;
  // For readers that use the tables' ordered samples only for the union LRU of a table read on
  // several ranks (edo report, the dashboard): the same as load(), except that a recording with
  // fewer than two processes that have a rank loads no ordered sample (ordered_sample() is
  // nullptr; the samples are still checked). They are most of the statistics' bytes: 0.3 GB
  // of a report's memory at 10,000 tables (issue 31). The tuner's replay needs them: load().
  model::Profile load_for_viewing(const std::function<void(size_t done, size_t total)>& on_table = {}) const;
  // For a reader that needs a few numbers of each table, not its statistics (edo diff): as
  // load_for_viewing(), but each table's aggregate (without its ordered sample) is handed to
  // `take` (with the table's own columns; its extras come later) as soon as it is decoded, and
  // the table keeps an empty one. One table's statistics are in memory at a time: at 200,000
  // tables all of them are gigabytes (issue 31).
  model::Profile load_each_table(const std::function<void(const model::Table& table)>& take) const;
  // Whether no two of the file's tables share a name (one process each: table_views() then
  // makes one view of each table, under its own name, with nothing to merge).
  bool table_names_distinct() const;

  // What a viewer can show at once, without decoding any table's statistics (the slow part
  // of load() on large recordings): everything load() returns except that every table carries
  // an empty aggregate, plus the lookups stored beside each table's statistics, by table id.
  struct Outline {
    model::Profile profile;
    std::map<int64_t, uint64_t> lookups_by_table;
  };
  Outline load_outline() const;

  // The open database, for this file's other readers and writers (tune_store.h,
  // weight_store.h). Not for general use: the schema is private to db/.
  SQLite::Database& database() const;
  Mode mode() const;

 private:
  struct Impl;
  explicit ProfileStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edo::db
