// One-line messages on stderr (written with write(2): safe before stdio is set up and in
// forked children).
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "quiet_fsize.h"
#include "tracer_log.h"

namespace edo::capture {

void tracer_log(const std::string& s) {
  std::string line = s.rfind("edo: ", 0) == 0 ? s : "edo: " + s;
  if (line.back() != '\n') line.push_back('\n');
  QuietFileSizeSignal quiet;  // stderr may be a file at the job's RLIMIT_FSIZE
  ssize_t r = ::write(2, line.data(), line.size());
  (void)r;
}

void tracer_verbose(const std::string& line) {
  const Process* p = process();
  if (p && p->cfg.verbose) tracer_log(line);
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace edo::capture
