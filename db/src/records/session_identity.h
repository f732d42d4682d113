// The job identity of each session (schema v7, session_identity; edo/model/rank_identity.h).
// Private to db/; ProfileStore::save()/load() call these inside their transaction.
#pragma once

#include <SQLiteCpp/Database.h>

#include "edo/model/profile.h"

namespace edo::db {

// Replaces the identity rows of the profile's sessions (a session with an empty identity has none).
void save_session_identity(SQLite::Database& db, const model::Profile& p);
void load_session_identity(SQLite::Database& db, model::Profile& p);

}  // namespace edo::db
