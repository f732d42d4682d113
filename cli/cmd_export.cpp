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
#include "edo/tuner/plan_io.h"
#include "support/output_file.h"
#include "support/plan/plan_source.h"
#include "support/plan/recording_exports.h"
#include "support/terminal.h"
#include "support/plan/vocab_remap_export.h"

namespace edo::cli::export_command {
namespace {

struct ExportOptions {
  std::string file;
  std::string format = "json";
  std::string output;
  int64_t run = 0;  // 0: the latest run that found a plan
  bool force = false;
  VocabRemapRequest vocab;  // --format vocab-remap (support/plan/vocab_remap_export.h)
};

// The first line of every `--format torchrec` file (plan_torchrec.cpp): how -o recognises one.
constexpr const char* kTorchRecHead = "# edo plan for TorchRec's sharding planner, written by `edo export --format torchrec`";

// How every `--format fbgemm-bench` file starts (fbgemm_bench_json's first key, dumped with
// 2-space indent).
constexpr const char* kFbgemmBenchHead = "{\n  \"schema\": \"edo.fbgemm-bench/1\"";

std::string head_of(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// Whether `path` holds a plan `edo export --format format` could have written: JSON and YAML
// plans must read back through plan import (and be JSON or YAML as asked), a TorchRec file must
// start with export's own first line. Only such a file is replaced by -o (with --force).
bool is_plan_of_format(const std::string& path, const std::string& format) {
  if (format == "torchrec") return head_of(path, 200).rfind(kTorchRecHead, 0) == 0;
  if (format == "fbgemm-bench") return head_of(path, 200).rfind(kFbgemmBenchHead, 0) == 0;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (text[first] == '{') != (format == "json")) return false;
  try {
    tuner::plan_from_text(text);
    return true;
  } catch (const std::exception&) {
    return false;
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

int write_text(const ExportOptions& o, const std::string& text) {
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    write_file(o.output, text);
    std::fprintf(stderr, "edo export: wrote %s (%s)\n", terminal_safe(o.output).c_str(), o.format.c_str());
  }
  return 0;
}

// The recording's access pattern for FBGEMM's TBE benchmark (no plan needed).
std::string fbgemm_bench_text(const std::string& file) {
  if (!std::filesystem::exists(file)) throw Failure(terminal_safe(file) + ": no such file; give the .edodb that 'edo record' wrote");
  try {
    return fbgemm_bench_of_file(file).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } catch (const std::runtime_error& e) {
    throw Failure(terminal_safe(file) + ": " + e.what());
  }
}

int run_export(const ExportOptions& o) {
  if (!o.output.empty() && o.output != "-") {
    // The rule and --force of `edo record -o`, for plan files: checked before anything is read.
    const bool bench = o.format == "fbgemm-bench";
    const OutputKind remap_kind{"an edo vocab-remap file", is_vocab_remap_file, "vocab-remap.json"};
    if (o.format == "vocab-remap") check_output_path(o.output, o.force, remap_kind);
    const OutputKind kind{bench ? std::string("an edo fbgemm-bench file")
                                : std::string(o.format == "json" ? "a JSON" : o.format == "yaml" ? "a YAML" : "a TorchRec") + " edo plan",
                          [&](const std::string& p) { return is_plan_of_format(p, o.format); },
                          bench ? std::string("bench.json") : "plan." + std::string(o.format == "torchrec" ? "py" : o.format)};
    if (o.format != "vocab-remap") check_output_path(o.output, o.force, kind);  // a Failure (exit 1), as in edo record
  }
  if (o.format == "vocab-remap") {
    VocabRemapRequest r = o.vocab;
    r.file = o.file;
    return write_text(o, vocab_remap_text(r));
  }
  if (o.format == "fbgemm-bench") return write_text(o, fbgemm_bench_text(o.file));
  const model::TuneResult r = load_plan_source(o.file, o.run);
  // TorchRec's file says what the recording knows (config names, features, pooling, miss curves).
  const auto facts = o.format == "torchrec" ? torchrec_facts_of_file(o.file) : std::map<std::string, tuner::TorchRecFacts>{};
  write_text(o, tuner::plan_document(r, o.format, facts));
  if (!r.feasible) std::fprintf(stderr, "edo export: note: this plan is infeasible (nothing fit its budget): it lists no tables\n");
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<ExportOptions>();
  sub.footer(
      "FILE is an .edodb (its latest plan that fits, from 'edo tune'; --run N for another run) or a plan written by 'edo export' (JSON or YAML).\n"
      "json: the edo.plan/1 object; yaml: the same content; torchrec: Python that builds a ParameterConstraints per\n"
      "table (compute kernel, cache load factor of the chosen cache) and the DataType of each table for\n"
      "EmbeddingBagConfig, for TorchRec's EmbeddingShardingPlanner. fbgemm-bench (an .edodb only, no plan needed): per table,\n"
      "FBGEMM's TBE benchmark configuration (TBEDataConfig: rows, dim, pooling per feature, batch size, heavy hitters and\n"
      "Zipf q, s as tbe_estimate_indices_distribution fits them). vocab-remap (an .edodb only): a token table's id remap for\n"
      "trimming its vocabulary to the ids that cover --coverage % of the first 70 % of its lookups (docs/formats.md).\n"
      "Table names are quoted data in every format.\n\n"
      "Example:\n  edo export run.edodb --format torchrec -o plan.py\n  edo export run.edodb --format fbgemm-bench -o bench.json");
  sub.add_option("file", o->file, "an .edodb that 'edo tune' wrote to, or a JSON/YAML plan")->required();
  sub.add_option("--format", o->format, "json, yaml, torchrec, fbgemm-bench or vocab-remap")
      ->check(CLI::IsMember({"json", "yaml", "torchrec", "fbgemm-bench", "vocab-remap"}))
      ->capture_default_str();
  sub.add_option("-o,--output", o->output, "file to write (default: stdout); an existing file is replaced only with --force, and only if it is a plan of the same format");
  sub.add_flag("--force", o->force, "replace the -o file if it is an edo plan of the same format (other files are never replaced)");
  sub.add_option("--run", o->run, "the tune run to export ('edo report' lists them; default: the latest that found a plan)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--table", o->vocab.table, "vocab-remap: the token table (default: the recording's only one)");
  sub.add_option("--coverage", o->vocab.coverage, "vocab-remap: keep the ids that cover this percent of the fitted lookups")
      ->check(CLI::IsMember({"99", "99.9", "99.99"}))
      ->capture_default_str();
  sub.add_option("--unk", o->vocab.unk, "vocab-remap: the old id every dropped id maps to (default: the first kept id)");
  return [o] {
    if (o->format != "vocab-remap" && (!o->vocab.table.empty() || o->vocab.unk))
      throw UsageError("--table and --unk belong to --format vocab-remap");
    return run_export(*o);
  };
}

}  // namespace

EDO_REGISTER_COMMAND("export", "write a recording's plan as JSON, YAML or TorchRec ParameterConstraints, or its access pattern for FBGEMM's benchmark", 27, setup);

}  // namespace edo::cli::export_command
