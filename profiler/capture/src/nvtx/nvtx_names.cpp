#include "nvtx_names.h"

#include <cstring>

namespace edo::capture {

const char* NvtxNames::string(const std::string& s) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = strings_.find(s);
  if (it == strings_.end()) {
    auto copy = std::make_unique<char[]>(s.size() + 1);
    std::memcpy(copy.get(), s.c_str(), s.size() + 1);
    it = strings_.emplace(s, std::move(copy)).first;
  }
  return it->second.get();
}

const NvtxNames::Domain* NvtxNames::domain(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = domains_.find(name);
  if (it == domains_.end()) it = domains_.emplace(name, std::make_unique<Domain>(Domain{name})).first;
  return it->second.get();
}

}  // namespace edo::capture
