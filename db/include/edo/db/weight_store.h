// Reading the weight snapshots of a recording (`edo record --weights`), which
// ProfileStore::load() leaves out because they are large.
#pragma once

#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/weights.h"

namespace edo::db {

// Every snapshot, or only those of tables named `table` (any session) when it is not empty.
// Throws DbError when a stored snapshot does not decode.
std::vector<model::WeightSnapshot> load_weight_snapshots(const ProfileStore& store, const std::string& table = "");

}  // namespace edo::db
