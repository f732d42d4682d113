// What the PyTorch hooks saw of the training (schema v14): the loss per step of each session,
// each table's optimizer hyperparameters and dense use. Private to db/; ProfileStore::save()/
// load() call these inside their transaction.
#pragma once

#include <SQLiteCpp/Database.h>

#include "edo/model/profile.h"

namespace edo::db {

// Tables' rows must be saved first (these update their columns).
void save_training_facts(SQLite::Database& db, const model::Profile& p);
void load_training_facts(SQLite::Database& db, model::Profile& p);

}  // namespace edo::db
