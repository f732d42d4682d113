// Which run each EDO_OUTPUT trace file belongs to, and which files `edo import` may merge.
//
// Every traced process's Hello carries its run id (wire::Hello::run_id: made by the run's first
// traced process, inherited by its children through EDO_RUN_ID). Files of two runs in one folder
// (the recipe without the collector, run twice) must not be merged silently: the first run's
// worker files would add its lookups to the second run's.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace edo::collector {

struct TraceFileRuns {
  std::string path;
  std::set<std::string> runs;  // run ids of the file's sessions; "" = a session without one
};

// Decodes the file's Hello frames (damage is skipped: the import reports it).
TraceFileRuns scan_trace_runs(const std::string& path);

struct RunChoice {
  std::string error;                // one line, empty when the files may be imported
  std::optional<std::string> run;   // the run to keep (sessions of other runs are skipped)
  std::vector<std::string> files;   // the files to import
  std::vector<std::string> skipped; // files holding no session of the chosen run
};

// Files of one run (or all without a run id, as before run ids existed) are imported together.
// Files of several runs, or files with and without a run id, are refused unless `wanted` names
// one run: then only that run's sessions are imported.
RunChoice choose_run(const std::vector<TraceFileRuns>& files, const std::optional<std::string>& wanted);

}  // namespace edo::collector
