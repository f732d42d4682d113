#include "support/plan/plan_source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/tuner/plan_io.h"
#include "support/terminal.h"

namespace edo::cli {
namespace {

}  // namespace

model::TuneResult load_plan_source(const std::string& path, int64_t run) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Failure(terminal_safe(path) + ": no such file; give an .edodb that 'edo tune' wrote to, or a plan file");
  if (std::filesystem::is_directory(path, ec)) throw Failure(terminal_safe(path) + ": is a directory, not an .edodb or a plan file");
  if (db::is_sqlite_file(path)) {
    db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
    if (run > 0) {
      const auto ids = db::tune_run_ids(store);
      if (std::find(ids.begin(), ids.end(), run) == ids.end())
        throw Failure(terminal_safe(path) + ": no tune run " + std::to_string(run) + "; 'edo report " + terminal_safe(path) +
                      "' lists the runs");
      return db::load_tune_result(store, run);
    }
    // A failed run (no plan fit) never hides the last good plan.
    auto r = db::load_latest_good_tune_result(store);
    if (!r) {
      if (db::tune_run_ids(store).empty())
        throw Failure(terminal_safe(path) + ": no plan in this recording; run 'edo tune " + terminal_safe(path) + " --budget SIZE' first");
      throw Failure(terminal_safe(path) + ": no tune run found a plan; run 'edo tune' with a larger --budget, or export a failed run "
                    "with --run N ('edo report' lists them)");
    }
    return std::move(*r);
  }
  if (run > 0) throw Failure(terminal_safe(path) + ": --run picks a tune run of an .edodb; a plan file holds one plan");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return tuner::plan_from_text(ss.str());
  } catch (const tuner::PlanError& e) {
    // A plan file from outside is input to validate: a bad one is a bad file (exit 1), like a
    // bad recording; exit 2 is for the command line alone.
    throw Failure(terminal_safe(path) + ": " + e.what() + "; give a plan written by 'edo export' or 'edo tune --json'");
  }
}

}  // namespace edo::cli
