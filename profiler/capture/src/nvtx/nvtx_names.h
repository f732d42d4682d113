// NVTX registered strings and domains (nvtxDomainRegisterString*, nvtxDomainCreate*): interned
// for the whole process, so a handle the job got stays valid for ever, in a forked child too.
// Process-wide state that survives fork(): it lives in Process, and its mutex is taken across
// fork() (lifecycle.cpp atfork_*) so the child never inherits it locked by a thread it does
// not have.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace edo::capture {

class NvtxNames {
 public:
  struct Domain {
    std::string name;
  };
  // The interned copy of `s` (one per distinct string; never freed).
  const char* string(const std::string& s);
  // The domain named `name` (one per distinct name; never freed).
  const Domain* domain(const std::string& name);
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<char[]>> strings_;  // mu_
  std::unordered_map<std::string, std::unique_ptr<Domain>> domains_;  // mu_
};

}  // namespace edo::capture
