// The ordered samples of a few tables for a reader that loaded the rest without them
// (ProfileStore::load_for_viewing() drops them: most of a report's memory at many tables).
// `edo report` needs the token tables' order for their vocabulary coverage (issue 33 point 6).
#pragma once

#include <functional>

#include "edo/db/profile_store.h"
#include "edo/model/profile.h"

namespace edo::db {

// Re-decodes the statistics, ordered sample included, of every table of `profile` (loaded from
// `store`) for which `want` is true. Throws std::runtime_error when a table's statistics do not
// decode (as load() would have).
void load_ordered_samples(const ProfileStore& store, model::Profile& profile, const std::function<bool(const model::Table&)>& want);

}  // namespace edo::db
