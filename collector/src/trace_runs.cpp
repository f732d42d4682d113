// The run ids of trace files and the choice `edo import` makes with them (trace_runs.h).
#include "edo/collector/trace_runs.h"

#include <fstream>
#include <map>
#include <variant>

#include "edo/wire/wire.h"

namespace edo::collector {

TraceFileRuns scan_trace_runs(const std::string& path) {
  TraceFileRuns out;
  out.path = path;
  std::ifstream in(path, std::ios::binary);
  wire::StreamDecoder dec;
  std::vector<char> buf(1 << 20);
  wire::Message m;
  auto drain = [&] {
    for (;;) {
      const auto r = dec.next(m);
      if (r.status == wire::StreamDecoder::Status::kNeedMore) break;
      if (r.status == wire::StreamDecoder::Status::kMessage)
        if (const auto* h = std::get_if<wire::Hello>(&m)) out.runs.insert(h->run_id);
    }
  };
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) dec.feed(buf.data(), size_t(in.gcount()));
    drain();
  }
  dec.end_of_stream();
  drain();
  return out;
}

namespace {

std::string shown_run(const std::string& id) { return id.empty() ? "(no run id)" : id; }

// "a, b, c and 4 more"
std::string some_names(const std::vector<std::string>& names) {
  std::string s;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

}  // namespace

RunChoice choose_run(const std::vector<TraceFileRuns>& files, const std::optional<std::string>& wanted) {
  RunChoice c;
  // Runs in the order their first file was given, with the files that hold them.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> files_of;
  for (const auto& f : files)
    for (const auto& r : f.runs) {
      if (!files_of.count(r)) order.push_back(r);
      files_of[r].push_back(f.path);
    }
  std::string ids;
  for (const auto& r : order)
    if (!r.empty()) ids += (ids.empty() ? "" : ", ") + r;
  if (wanted) {
    if (!files_of.count(*wanted) || wanted->empty()) {
      c.error = "no trace file belongs to run " + *wanted + " (runs found: " + (ids.empty() ? "none with a run id" : ids) + ")";
      return c;
    }
    c.run = *wanted;
    for (const auto& f : files)
      (f.runs.count(*wanted) ? c.files : c.skipped).push_back(f.path);
    return c;
  }
  if (order.size() > 1) {
    std::string runs;
    for (const auto& r : order)
      runs += (runs.empty() ? "" : "; ") + std::string("run ") + shown_run(r) + ": " + some_names(files_of[r]);
    c.error = "the trace files come from " + std::to_string(order.size()) +
              " runs, not merged (stale files of an earlier run in the folder?): " + runs +
              "; import one with --run ID (ids found: " + (ids.empty() ? "none" : ids) + ") or remove the other files";
    return c;
  }
  for (const auto& f : files) c.files.push_back(f.path);
  return c;
}

}  // namespace edo::collector
