#include "support/trace_library.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "command.h"

namespace edo::cli {
std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string p(buf);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

TraceLibrary find_trace_library() {
  const std::string expected = executable_dir() + "/../lib/libedo_trace.so";
  char buf[PATH_MAX];
  if (!realpath(expected.c_str(), buf) || access(buf, R_OK) != 0)
    throw Failure("cannot find libedo_trace.so at " + expected +
                  " (it belongs next to the edo executable, in ../lib; rebuild or reinstall edo)");
  TraceLibrary t;
  t.lib = buf;
  const std::string libdir = t.lib.substr(0, t.lib.rfind('/'));
  if (is_dir(libdir + "/python")) t.python = libdir + "/python";
  if (is_dir(libdir + "/python/edo_boot")) t.boot = libdir + "/python/edo_boot";
  return t;
}

std::string sanitizer_runtime() {
#ifdef EDO_SANITIZER_PRELOAD
  return EDO_SANITIZER_PRELOAD;
#else
  return {};
#endif
}

}  // namespace edo::cli
