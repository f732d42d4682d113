// `edo export`: the latest plan of a recording (or a plan file written earlier) as JSON, YAML
// or Python for TorchRec's planner.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/tuner/plan_io.h"
#include "support/terminal.h"

namespace edo::cli {
namespace {

struct ExportOptions {
  std::string file;
  std::string format = "json";
  std::string output;
  int64_t run = 0;  // 0: the latest run that found a plan
};

bool is_sqlite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::string(head, 16) == std::string("SQLite format 3\0", 16);
}

// `run`: 0 for the latest run that found a plan, else that run (`--run N`, as `edo report`
// lists them).
model::TuneResult load_plan(const std::string& path, int64_t run) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Failure(terminal_safe(path) + ": no such file; give an .edodb that 'edo tune' wrote to, or a plan file");
  if (std::filesystem::is_directory(path, ec)) throw Failure(terminal_safe(path) + ": is a directory, not an .edodb or a plan file");
  if (is_sqlite(path)) {
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
    throw Failure(terminal_safe(path) + ": " + e.what());
  }
}

// Written next to the target and renamed over it: a reader never sees half a plan.
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Failure(terminal_safe(path) + ": cannot write (" + std::strerror(errno) + "); check the folder and its permissions");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Failure(terminal_safe(path) + ": cannot write (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Failure(terminal_safe(path) + ": cannot write (" + ec.message() + ")");
  }
}

int run_export(const ExportOptions& o) {
  const model::TuneResult r = load_plan(o.file, o.run);
  std::string text;
  if (o.format == "json") text = tuner::plan_to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  else if (o.format == "yaml") text = tuner::plan_to_yaml(r);
  else text = tuner::plan_to_torchrec(r);
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    write_file(o.output, text);
    std::fprintf(stderr, "edo export: wrote %s (%s)\n", terminal_safe(o.output).c_str(), o.format.c_str());
  }
  if (!r.feasible) std::fprintf(stderr, "edo export: note: this plan is infeasible (nothing fit its budget): it lists no tables\n");
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ExportOptions>();
  sub.footer(
      "FILE is an .edodb (its latest plan that fits, from 'edo tune'; --run N for another run) or a plan written by 'edo export' (JSON or YAML).\n"
      "json: the edo.plan/1 object; yaml: the same content; torchrec: Python that builds a ParameterConstraints per\n"
      "table (compute kernel, cache load factor of the chosen cache) and the DataType of each table for\n"
      "EmbeddingBagConfig, for TorchRec's EmbeddingShardingPlanner. Table names are quoted data in every format.\n\n"
      "Example:\n  edo export run.edodb --format torchrec -o plan.py");
  sub.add_option("file", o->file, "an .edodb that 'edo tune' wrote to, or a JSON/YAML plan")->required();
  sub.add_option("--format", o->format, "json, yaml or torchrec")->check(CLI::IsMember({"json", "yaml", "torchrec"}))->capture_default_str();
  sub.add_option("-o,--output", o->output, "file to write (default: stdout)");
  sub.add_option("--run", o->run, "the tune run to export ('edo report' lists them; default: the latest that found a plan)")
      ->check(CLI::PositiveNumber);
  return [o] { return run_export(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("export", "write a recording's plan as JSON, YAML or TorchRec ParameterConstraints", 27, setup);

}  // namespace edo::cli
