// `edo import`: turn EDO_OUTPUT frame files (the tracer without `edo record`) into an .edodb.
//
// Damaged input: every truncated or corrupt region is reported on one line naming the file
// and byte offset; everything that decodes is kept. Exit code 0 when at least one frame was
// decoded (damage is reported, not fatal: a job killed mid-write leaves a truncated tail),
// 1 when nothing at all could be decoded (no database is written).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "command.h"
#include "edo/collector/collector.h"
#include "edo/collector/trace_runs.h"
#include "edo/db/profile_store.h"
#include "support/output_file.h"
#include "support/terminal.h"
#include "version.h"

namespace edo::cli::import_command {
namespace {

struct ImportOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string run;  // --run: import only this run's sessions
  bool force = false;
};

int run_import(const ImportOptions& o) {
  // A missing input is a bad file (exit 1), not a bad command line (issue 30 §9).
  for (const auto& path : o.inputs) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw Failure(terminal_safe(path) + ": no such file; give the EDO_OUTPUT file(s) the job wrote (see 'edo env')");
  }
  const std::string out = o.output.empty() ? o.inputs.front() + ".edodb" : o.output;
  check_output_path(out, o.force);
  // Files of different runs (stale worker files of an earlier run in the same folder) are not
  // merged: refused, naming the runs, unless --run picks one.
  std::vector<collector::TraceFileRuns> scanned;
  for (const auto& path : o.inputs) {
    if (!std::ifstream(path, std::ios::binary)) throw Failure("cannot read " + path);
    scanned.push_back(collector::scan_trace_runs(path));
  }
  const collector::RunChoice choice =
      collector::choose_run(scanned, o.run.empty() ? std::nullopt : std::optional<std::string>(o.run));
  if (!choice.error.empty()) throw Failure(choice.error);
  if (!choice.skipped.empty()) {
    std::string names;
    for (size_t i = 0; i < choice.skipped.size() && i < 3; ++i) names += (i ? ", " : "") + choice.skipped[i];
    if (choice.skipped.size() > 3) names += " and " + std::to_string(choice.skipped.size() - 3) + " more";
    std::fprintf(stderr, "edo import: %zu file(s) hold no session of run %s, not imported: %s\n", choice.skipped.size(),
                 terminal_safe(*choice.run).c_str(), terminal_safe(names).c_str());
  }
  collector::ProfileBuilder builder("import");
  builder.profile().metadata["edo_version"] = EDO_VERSION;
  if (choice.run) builder.keep_only_run(*choice.run);
  for (const auto& path : choice.files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Failure("cannot read " + path);
    const int s = builder.open_stream(path);
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), std::streamsize(buf.size()));
      if (in.gcount() > 0) builder.feed(s, buf.data(), size_t(in.gcount()));
    }
    builder.close_stream(s);
  }
  for (auto& is : builder.issues())
    std::fprintf(stderr, "edo import: %s: byte %llu: %s\n", terminal_safe(is.stream).c_str(),
                 static_cast<unsigned long long>(is.offset), terminal_safe(is.message).c_str());
  if (builder.frames() == 0) {
    bool all_empty = true;
    for (const auto& path : o.inputs) all_empty &= std::ifstream(path, std::ios::binary | std::ios::ate).tellg() == 0;
    if (all_empty)
      throw Failure("the trace is empty: the job recorded nothing (no table registered, no lookup, no NVTX range, no "
                    "GPU allocation); for PyTorch, check that the job creates nn.Embedding/EmbeddingBag tables and "
                    "that EDO_TORCH is not 0");
    throw Failure("no edo trace frames could be decoded from the input (not an EDO_OUTPUT file?)");
  }
  db::ProfileStore store = db::ProfileStore::create_beside(out);  // replaced whole (issue 30 §4)
  store.save(builder.finish(), true);
  store.publish();
  std::fprintf(stderr, "edo import: wrote %s (%llu frames%s)\n", terminal_safe(out).c_str(),
               static_cast<unsigned long long>(builder.frames()),
               builder.issues().empty() ? "" : ", damaged input reported above");
  for (auto& line : collector::summary_lines(builder.profile())) std::fprintf(stderr, "  %s\n", terminal_safe(line).c_str());
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ImportOptions>();
  sub.add_option("trace", o->inputs, "EDO_OUTPUT file(s): the job's <path> and its children's <path>.<pid>")->required();
  sub.add_option("-o,--output", o->output, "the .edodb to write (default <first trace>.edodb)");
  sub.add_option("--run", o->run,
                 "import only the sessions of this run (a run id from the refusal of files of several runs)");
  sub.add_flag("--force", o->force, "replace the output if it is an edo database (other files are never replaced)");
  sub.footer(
      "\nDamaged input (a truncated tail, garbage): each damaged region is reported with its file\n"
      "and byte offset and skipped; everything that decodes is kept. Exit code 0 when at least one\n"
      "frame decoded, 1 when nothing could be decoded.\n"
      "\nEach traced run has an id (EDO_RUN_ID, made by its first process, inherited by its children,\n"
      "carried by every file). Files of several runs (stale files of an earlier run in the same\n"
      "folder) are refused, naming the runs; --run ID imports the sessions of that run only. Files\n"
      "written before run ids existed import as before, but not mixed with files that have one.\n");
  return [o] { return run_import(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("import", "turn EDO_OUTPUT trace files into an .edodb", 15, setup);

}  // namespace edo::cli::import_command
