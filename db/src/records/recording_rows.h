// A recording's per-session rows in the .edodb, saved and loaded through their declarations
// (edo/model/recording_fields.h): sessions and their drop counters, ties, the memory timeline,
// kernels, NVTX ranges and the metadata. Private to db/. The tables and their statistics are
// profile_store.cpp's; the other per-table and per-session facts have files of their own
// (table_extras, session_identity, training_facts).
#pragma once

#include <SQLiteCpp/Database.h>

#include <map>
#include <set>
#include <string>

#include "edo/model/profile.h"

namespace edo::db {

// Sessions (updated in place) and their drop counters (replaced).
void save_sessions(SQLite::Database& d, const model::Profile& p);
// Ties, memory events, kernels and ranges of `session_ids`, replaced wholesale.
void save_session_rows(SQLite::Database& d, const model::Profile& p, const std::set<int64_t>& session_ids);
// Entries added or replaced; other keys stay.
void save_metadata_rows(SQLite::Database& d, const std::map<std::string, std::string>& entries);

// The loads throw DbError (OutOfRange) naming what is damaged, not the file: the store says whose.
void load_sessions(SQLite::Database& d, model::Profile& p);
void load_session_rows(SQLite::Database& d, model::Profile& p);
void load_metadata(SQLite::Database& d, model::Profile& p);

}  // namespace edo::db
