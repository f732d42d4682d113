// What the analysis commands do with a database, for the database fuzz targets: open it
// read-only, load it, build the report's table views and its JSON. A DbError is the one-line
// message the user sees (acceptable); anything else escaping is a finding.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"
#include "support/report/report_json.h"

namespace edo::fuzz {

// A private scratch folder for this process's database files, removed at exit. (The name
// lives on the heap for good: the exit handler runs after static strings are destroyed.)
inline const std::string& scratch_dir() {
  static const std::string* dir = [] {
    // Memory-backed when possible: every execution writes a database.
    const char* tmp = std::getenv("TMPDIR");
    const std::string base = tmp && *tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    auto* d = new std::string(base + "/edo-fuzz-db-" + std::to_string(getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return *dir;
}

// Removes the file and the side files SQLite may leave beside it.
inline void remove_database(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}

inline void read_side(const std::string& path) {
  try {
    edo::db::ProfileStore store(path, edo::db::ProfileStore::Mode::kReadOnly);
    const edo::model::Profile profile = store.load();
    const auto views = edo::model::table_views(profile);
    (void)profile.peak_bytes();
    (void)profile.table_bytes();
    // as `edo report --json` prints it: bytes that are not UTF-8 become U+FFFD
    (void)edo::cli::report_json(profile, views, 5).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const edo::db::DbError&) {
  }
}

}  // namespace edo::fuzz
