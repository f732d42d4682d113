// `edo merge`: one recording of a multi-node job from one recording per node (issue 22).
// The merge itself is edo/model/profile_merge.h (checks, canonical order, clocks) and
// edo/db/merge_files.h (files); this file is the command line.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command.h"
#include "edo/db/merge_files.h"
#include "support/output_file.h"
#include "support/terminal.h"

namespace edo::cli::merge_command {
namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string align = "wall";
  bool force = false;
  bool replace = false;
};

int run_merge(const MergeOptions& o) {
  // A missing input is a bad file (exit 1), not a bad command line (issue 30 §9).
  for (const auto& path : o.inputs) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw Failure(terminal_safe(path) + ": no such file; give the .edodb files 'edo record' wrote on each node");
  }
  check_output_path(o.output, o.replace);
  model::MergeOptions mo;
  mo.force = o.force;
  mo.align = o.align == "start" ? model::ClockAlign::kStart : model::ClockAlign::kWall;
  model::MergeSummary s;
  try {
    s = db::merge_files(o.inputs, o.output, mo);
  } catch (const model::MergeRefused& e) {
    throw Failure(e.what());
  }
  for (const auto& w : s.warnings) std::fprintf(stderr, "edo merge: warning: %s\n", terminal_safe(w).c_str());
  std::string ranks;
  if (!s.ranks.empty())
    ranks = s.ranks.size() == size_t(s.ranks.back() - s.ranks.front() + 1)
                ? fmt::format("ranks {}..{}", s.ranks.front(), s.ranks.back())
                : fmt::format("{} ranks", s.ranks.size());
  std::fprintf(stderr, "edo merge: wrote %s: %zu recordings, %zu processes%s on %zu host(s)%s\n",
               terminal_safe(o.output).c_str(), o.inputs.size(), s.sessions, ranks.empty() ? "" : (", " + ranks).c_str(),
               s.hosts.size(), s.job.empty() ? "" : (", job " + terminal_safe(s.job)).c_str());
  if (s.hosts.size() > 1)
    std::fprintf(stderr, "  clocks: %s; the hosts' first processes start %.3f s apart\n",
                 o.align == "start" ? "each host's first process moved to the job's earliest start (--align start)"
                                    : "each host's own wall clock (--align wall; off by the hosts' clock offset)",
                 static_cast<double>(s.host_start_spread_ns) / 1e9);
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<MergeOptions>();
  sub.add_option("recordings", o->inputs, "the .edodb files of one job (one per node, from 'edo record' or 'edo merge')")
      ->required();
  sub.add_option("-o,--output", o->output, "the merged .edodb to write")->required();
  sub.add_option("--align", o->align,
                 "how the hosts' timelines are lined up: 'wall' (each host's wall clock as recorded: off by the hosts' "
                 "clock offset, ~1 ms under NTP) or 'start' (each host's first process moved to the job's earliest "
                 "start: for hosts without synchronised clocks; off by how far apart the nodes launched)")
      ->check(CLI::IsMember({"wall", "start"}));
  sub.add_flag("--force", o->force,
               "merge recordings of different jobs or without a job identity, and a rank recorded twice (each kept as "
               "its own process)");
  sub.add_flag("--replace", o->replace, "replace the output if it is an edo database (other files are never replaced)");
  sub.footer(
      "\nEach process of every recording stays its own session: each rank keeps its counts, memory timeline, steps\n"
      "and drop counters, and the report, tuner and dashboard add them up per table (exact counts added, count-min\n"
      "sketches added, HyperLogLog registers united). Recordings of different jobs (torchrun's TORCHELASTIC_RUN_ID,\n"
      "else MASTER_ADDR:MASTER_PORT, with WORLD_SIZE) and two recordings of one rank are refused unless --force.\n"
      "Merging is associative: merging in any grouping gives the same database. Tune runs are not carried over.\n"
      "See docs/multi-node.md.\n\n"
      "Example:\n  edo merge node0.edodb node1.edodb -o job.edodb && edo report job.edodb\n");
  return [o] { return run_merge(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("merge", "merge the recordings of one multi-node job (one per node) into one", 17, setup);

}  // namespace edo::cli::merge_command
