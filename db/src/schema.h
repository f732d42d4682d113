// The .edodb schema and its forward migrations. Private to db/.
#pragma once

#include <SQLiteCpp/Database.h>

namespace edo::db::schema {

// Bump when the schema changes and add a migration step from the previous version.
constexpr int kCurrentVersion = 18;
// The value of edo_meta.format that marks a file as an edo database.
constexpr const char* kFormatTag = "edo.profile";

// Creates every table of the current schema in an empty database.
void create(SQLite::Database& db);
// Reads the schema version; throws DbError when the file is not an edo database.
int read_version(SQLite::Database& db, const std::string& path);
// Applies migrations from `from` up to kCurrentVersion (inside one transaction).
void migrate(SQLite::Database& db, int from);

}  // namespace edo::db::schema
