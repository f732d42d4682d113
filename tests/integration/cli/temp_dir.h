// A folder of this test process's own under the test temp folder (::testing::TempDir()), made
// empty on first use and the same for the rest of the process: `prefix` + the process id, so
// that tests running in parallel (ctest -j) never share files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace edo::testing {

inline std::string process_temp_dir(const std::string& prefix) {
  static std::mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  auto it = made.find(prefix);
  if (it == made.end()) {
    const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(getpid()));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    it = made.emplace(prefix, p.string()).first;
  }
  return it->second;
}

}  // namespace edo::testing
