// `edo merge` on files: reads every input recording (weight snapshots included), merges them
// (edo/model/profile_merge.h) and writes one new .edodb. Tune results of the inputs are not
// carried over: a plan is made for the whole job (`edo tune` on the merged file).
#pragma once

#include <string>
#include <vector>

#include "edo/model/profile_merge.h"

namespace edo::db {

// Throws model::MergeRefused (inputs of different jobs, a rank twice: one line naming the
// files) or DbError (an unreadable input, an output that is one of the inputs).
model::MergeSummary merge_files(const std::vector<std::string>& inputs, const std::string& output,
                                const model::MergeOptions& options);

}  // namespace edo::db
