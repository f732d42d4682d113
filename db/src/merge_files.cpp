#include "edo/db/merge_files.h"

#include <SQLiteCpp/Database.h>

#include <filesystem>
#include <system_error>

#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
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
  bool cut_short = false;
  for (const auto& path : inputs) {
    ProfileStore store(path, ProfileStore::Mode::kReadOnly);
    model::LabeledProfile lp{path, store.load()};
    // A recording still being written, or cut short, is not merged as if it were whole: refused,
    // or with --force merged and the result marked incomplete (issue 30 §10).
    if (const RecordingState rs = recording_state(lp.profile); !rs.whole()) {
      if (!options.force)
        throw DbError(path + ": " + rs.word() + "; merge recordings whose edo record finished, or add --force to merge " +
                      "what it holds (the merged recording is then marked incomplete)");
      cut_short = true;
    }
    lp.profile.weights = load_weight_snapshots(store);
    tune_runs += size_t(store.database().execAndGet("SELECT COUNT(*) FROM tune_runs").getInt64());
    loaded.push_back(std::move(lp));
  }
  model::MergeSummary summary;
  model::Profile merged = model::merge_profiles(loaded, options, &summary);
  loaded.clear();
  for (const char* key : {kRecordingState, kRecordingWriterPid, kRecordingWriterHost, kRecordingStartedNs, kRecordingSavedNs,
                          kRecordingSaveError, kRecordingReceivedNs, kRecordingReceivedLookups, kRecordingSavedLookups,
                          kRecordingFinalSave})
    merged.metadata.erase(key), merged.metadata.erase(std::string("merge.values.") + key);
  if (cut_short) {
    merged.metadata[kRecordingState] = "in_progress";  // no writer (pid 0): incomplete
    merged.metadata[kRecordingWriterPid] = "0";
  }
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
