#include "edo/db/merge_files.h"

#include <SQLiteCpp/Database.h>

#include <filesystem>
#include <system_error>

#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"

namespace edo::db {

model::MergeSummary merge_files(const std::vector<std::string>& inputs, const std::string& output,
                                const model::MergeOptions& options) {
  if (inputs.size() < 2) throw DbError("edo merge needs at least two recordings (got " + std::to_string(inputs.size()) + ")");
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, output, ec))
      throw DbError(output + " is also an input; write the merged recording to a new file");
  }
  std::vector<model::LabeledProfile> loaded;
  loaded.reserve(inputs.size());
  size_t tune_runs = 0;
  for (const auto& path : inputs) {
    ProfileStore store(path, ProfileStore::Mode::kReadOnly);
    model::LabeledProfile lp{path, store.load()};
    lp.profile.weights = load_weight_snapshots(store);
    tune_runs += size_t(store.database().execAndGet("SELECT COUNT(*) FROM tune_runs").getInt64());
    loaded.push_back(std::move(lp));
  }
  model::MergeSummary summary;
  model::Profile merged = model::merge_profiles(loaded, options, &summary);
  loaded.clear();
  ProfileStore out = ProfileStore::create_beside(output);  // the output is replaced whole
  out.save(merged, true);
  out.publish();
  if (tune_runs)
    summary.warnings.push_back(std::to_string(tune_runs) +
                               " tune run(s) of the inputs not carried over: a plan is for the whole job, run "
                               "'edo tune' on the merged recording");
  return summary;
}

}  // namespace edo::db
