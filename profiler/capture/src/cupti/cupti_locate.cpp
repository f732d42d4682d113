#include "cupti_locate.h"

#include <dirent.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace edo::capture {
namespace {

std::vector<std::string> mapped_files() {
  std::vector<std::string> files;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &files);
  return files;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
std::string dir_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// libcupti.so* files in `dir`, the highest version first (libcupti.so.13 before libcupti.so).
std::vector<std::string> cupti_in(const std::string& dir) {
  std::vector<std::string> found;
  if (dir.empty()) return found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "libcupti.so", 11) == 0) found.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a > b;
  });
  return found;
}

}  // namespace

std::string mapped_cupti() {
  for (const std::string& f : mapped_files())
    if (base_name(f).rfind("libcupti.so", 0) == 0) return f;
  return {};
}

std::vector<std::string> cupti_candidates(const std::string& explicit_path, const std::string& build_default) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  add(explicit_path);
  add(mapped_cupti());
  for (const std::string& f : mapped_files()) {
    const std::string name = base_name(f), dir = dir_name(f);
    if (name.rfind("libcudart.so", 0) == 0) {
      for (const std::string& c : cupti_in(dir)) add(c);
      for (const std::string& c : cupti_in(dir + "/../../cuda_cupti/lib")) add(c);  // pip: nvidia/cuda_runtime/lib
    } else if (name.rfind("libtorch", 0) == 0) {
      for (const std::string& c : cupti_in(dir)) add(c);  // torch/lib
    }
  }
  add(build_default);
  add("libcupti.so.13");
  add("libcupti.so");
  return out;
}

}  // namespace edo::capture
