#include "job_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace edo::capture {
namespace {

bool torch_hook_off(const char* v) {
  if (!v) return false;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s == "0" || s == "off" || s == "false" || s == "no";
}

bool path_list_has(const std::string& list, const std::string& entry) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (list.compare(start, end - start, entry) == 0) return true;
    start = end + 1;
  }
  return false;
}

int threads_of_this_process() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> job_environment(const JobEnvInputs& in,
                                                                 std::vector<std::string>* warnings) {
  std::vector<std::pair<std::string, std::string>> out;
  if (in.lib_path.empty()) return out;
  const std::string libdir = in.lib_path.substr(0, in.lib_path.rfind('/'));
  const char* lib = in.get("EDO_TRACE_LIB");
  if (!lib || !*lib) {
    out.emplace_back("EDO_TRACE_LIB", in.lib_path);
  } else if (!in.is_readable(lib)) {
    if (warnings)
      warnings->push_back(std::string("edo: ignoring EDO_TRACE_LIB='") + lib +
                          "' (no readable file there); using the default " + in.lib_path);
    out.emplace_back("EDO_TRACE_LIB", in.lib_path);
  }
  const char* root = in.get("EDO_ROOT_PID");
  if ((!root || !*root) && in.pid > 0) out.emplace_back("EDO_ROOT_PID", std::to_string(in.pid));
  const char* nvtx = in.get("NVTX_INJECTION64_PATH");
  if (!nvtx || !*nvtx) out.emplace_back("NVTX_INJECTION64_PATH", in.lib_path);
  const std::string boot = libdir + "/python/edo_boot", pkg = libdir + "/python";
  if (!torch_hook_off(in.get("EDO_TORCH")) && in.is_dir(boot)) {
    const char* pp = in.get("PYTHONPATH");
    const std::string old = pp ? pp : "";
    if (!path_list_has(old, boot)) out.emplace_back("PYTHONPATH", boot + ":" + pkg + (old.empty() ? "" : ":" + old));
  }
  return out;
}

void set_up_job_environment(const std::string& lib_path, std::vector<std::string>* warnings) {
  if (threads_of_this_process() != 1) return;  // loaded late (dlopen in a running program)
  JobEnvInputs in;
  in.lib_path = lib_path;
  in.pid = getpid();
  in.get = [](const char* n) { return static_cast<const char*>(getenv(n)); };
  in.is_dir = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  in.is_readable = [](const std::string& p) { return access(p.c_str(), R_OK) == 0; };
  for (const auto& [name, value] : job_environment(in, warnings)) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace edo::capture
