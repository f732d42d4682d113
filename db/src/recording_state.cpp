// See recording_state.h.
#include "edo/db/recording_state.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace edo::db {
namespace {

int64_t number(const model::Profile& p, const char* key) {
  auto it = p.metadata.find(key);
  if (it == p.metadata.end() || it->second.empty() || it->second.size() > 19 ||
      it->second.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoll(it->second);
}

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Whether process `pid` on this host is alive and an edo (a pid reused by another program is not
// the writer).
bool edo_alive(int64_t pid) {
  if (pid <= 0 || pid > 0x3fffffff) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (!std::getline(comm, name)) return true;  // no /proc: alive is all that can be told
  return name.rfind("edo", 0) == 0;
}

std::string count(uint64_t n) { return std::to_string(n); }

std::string secs(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", static_cast<double>(ns) / 1e9);
  return b;
}

}  // namespace

std::string RecordingState::word() const {
  switch (kind) {
    case Kind::kComplete: return "complete";
    case Kind::kInProgress: return "recording in progress";
    case Kind::kIncomplete: return "incomplete";
  }
  return "complete";
}

std::string RecordingState::describe() const {
  if (kind == Kind::kComplete) return "";
  if (!save_error.empty()) {
    // A save failed: why, and how much of what edo record received the file holds (issue 30 §5).
    std::string held = "the file holds " + secs(saved_duration_ns());
    if (received_duration_ns() > 0) held += " of the job's " + secs(received_duration_ns());
    held += " and " + count(held_lookups) + " of the " + count(std::max(received_lookups, held_lookups)) +
            " lookups edo record received";
    if (kind == Kind::kInProgress)
      return "recording in progress, but its latest saves failed (" + save_error + "; edo record, pid " +
             std::to_string(writer_pid) + ", retries): " + held;
    return "incomplete: edo record could not save the whole recording (" + save_error + "): " + held +
           "; figures cover that much" + (saved_duration_ns() > 0 ? "" : ", the job's exit is unknown");
  }
  const std::string saved = saved_duration_ns() > 0 ? secs(saved_duration_ns()) + " of the job saved" : "nothing of the job saved yet";
  if (kind == Kind::kInProgress && writer_elsewhere)
    return "recording in progress, or cut short (edo record, pid " + std::to_string(writer_pid) + " on " + writer_host +
           ", had not made its final save; that host cannot be asked from here; " + saved + "): figures are as of the "
           "latest save";
  if (kind == Kind::kInProgress)
    return "recording in progress (edo record, pid " + std::to_string(writer_pid) +
           (writer_host.empty() ? std::string() : " on " + writer_host) + ", is still writing it; " + saved +
           " so far): figures are as of the latest save";
  if (writer_pid == 0)
    return "incomplete: merged (edo merge --force) from a recording that was cut short: figures cover what it held";
  // No note of a failed save got into the file: killed, crashed, or a disk so full that not even
  // the note fitted (issue 30 §5). Which one, only edo record's own closing line said.
  return "incomplete: the recording was cut short (edo record, pid " + std::to_string(writer_pid) +
         ", made no final save: it was killed or crashed, or the disk or file size limit had no room left even "
         "for a note of why (its closing line said which); " + saved + "): figures cover that much, the job's exit is "
         "unknown";
}

RecordingState recording_state(const model::Profile& p) {
  RecordingState s;
  auto it = p.metadata.find(kRecordingState);
  s.started_unix_ns = number(p, kRecordingStartedNs);
  s.saved_unix_ns = number(p, kRecordingSavedNs);
  s.writer_pid = number(p, kRecordingWriterPid);
  if (auto h = p.metadata.find(kRecordingWriterHost); h != p.metadata.end()) s.writer_host = h->second;
  if (it == p.metadata.end() || it->second != "in_progress") return s;
  if (auto e = p.metadata.find(kRecordingSaveError); e != p.metadata.end()) s.save_error = e->second;
  s.received_unix_ns = number(p, kRecordingReceivedNs);
  s.received_lookups = static_cast<uint64_t>(number(p, kRecordingReceivedLookups));
  if (p.metadata.count(kRecordingSavedLookups)) {
    s.held_lookups = static_cast<uint64_t>(number(p, kRecordingSavedLookups));
  } else {
    for (const auto& t : p.tables) s.held_lookups += t.aggregate.lookups();
  }
  const bool here = s.writer_host.empty() || s.writer_host == this_host();
  s.writer_elsewhere = !here;
  // A final save that failed and said so is over, whoever has the writer's pid now.
  const auto fin = p.metadata.find(kRecordingFinalSave);
  const bool failed = fin != p.metadata.end() && fin->second == "failed";
  s.kind = !failed && (!here || edo_alive(s.writer_pid)) ? RecordingState::Kind::kInProgress : RecordingState::Kind::kIncomplete;
  return s;
}

std::string recording_file_for(const std::string& output, int64_t pid) {
  const std::filesystem::path p(output);
  return (p.parent_path() / ("." + p.filename().string() + ".edo-recording-" + std::to_string(pid))).string();
}

std::vector<std::string> recording_files_for(const std::string& output) {
  namespace fs = std::filesystem;
  const fs::path p(output);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = "." + p.filename().string() + ".edo-recording-";
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back((p.parent_path() / name).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace edo::db
