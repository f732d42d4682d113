// Opening an .edodb that may come from anyone (issue 30 §8). An SQLite file carries its own SQL
// (triggers, views, defaults, checks) that runs when the file is read or written: a trigger
// planted in a recording deleted its tables when `edo tune` wrote to it. Every connection edo
// opens is hardened (defensive mode, schema not trusted, no extension loading), and a file whose
// schema holds objects edo did not create is refused before anything is read from it. Private
// to db/.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>

#include <string>

namespace edo::db {

// Defensive mode on, trusted_schema off, extension loading off. Call right after opening.
void harden_connection(SQLite::Database& db);

// Throws DbError naming `path` and the first object of its schema that edo's schema (any
// version it migrates from) does not create: a trigger, a view, or an unknown table or index.
void check_schema_objects(SQLite::Database& db, const std::string& path);

// Why a write failed, in the user's words: a full disk, the file size limit, a read-only file
// system, permissions, or (for every error that is not about the disk) what SQLite refused and
// why, never "check free disk space" for an error the disk has nothing to do with.
std::string write_failure(SQLite::Database& db, const SQLite::Exception& e);

}  // namespace edo::db
