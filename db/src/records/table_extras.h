// Parts of a profile stored beside the tables (schema v2): extra bytes by kind and weight
// snapshots. Private to db/; ProfileStore::save()/load() call these inside their transaction.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <map>

#include "edo/model/profile.h"

namespace edo::db {

// table id -> snapshot revision last written by this store.
using WrittenSnapshots = std::map<int64_t, uint64_t>;

void save_table_extras(SQLite::Database& db, const model::Profile& p);
void load_table_extras(SQLite::Database& db, model::Profile& p);
// When each table's rows were first read (schema v6, table_first_seen).
void save_first_seen(SQLite::Database& db, const model::Profile& p);
void load_first_seen(SQLite::Database& db, model::Profile& p);
// Writes the snapshots whose revision changed since this store last wrote them.
void save_weight_snapshots(SQLite::Database& db, const model::Profile& p, WrittenSnapshots& written);

}  // namespace edo::db
