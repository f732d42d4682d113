// A folder of this test process's own under the test temp folder (::testing::TempDir()), made
// empty on first use and the same for the rest of the process: `prefix` + the process id, so
// that tests running in parallel (ctest -j) never share files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace edo::testing {

// What make() returns for `key`, made on the first call for that key in this process (make()
// may itself call made_once() for another key).
inline const std::string& made_once(const std::string& key, const std::function<std::string()>& make) {
  static std::recursive_mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard<std::recursive_mutex> lock(mu);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, make()).first;
  return it->second;
}

inline std::string process_temp_dir(const std::string& prefix) {
  return made_once("temp dir " + prefix, [&] {
    const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(getpid()));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p.string();
  });
}

}  // namespace edo::testing
