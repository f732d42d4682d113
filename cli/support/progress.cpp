#include "support/progress.h"

#include <unistd.h>

#include <cstdio>

namespace edo::cli {

Progress::Progress(std::string label) : label_(std::move(label)), tty_(isatty(STDERR_FILENO) == 1) {}

void Progress::update(double done, double total, const std::string& detail) {
  if (total <= 0) return;
  const double pct = 100.0 * done / total;
  if (tty_) {
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    drawn_ = true;
    std::fprintf(stderr, "\r%s: %5.1f %% %s\033[K", label_.c_str(), pct, detail.c_str());
    std::fflush(stderr);
    return;
  }
  int decile = static_cast<int>(pct / 10.0);
  if (decile == last_decile_ || decile >= 10) return;
  if (last_decile_ < 0 && decile == 0) {
    last_decile_ = 0;
    return;
  }
  last_decile_ = decile;
  std::fprintf(stderr, "%s: %d %% %s\n", label_.c_str(), decile * 10, detail.c_str());
}

void Progress::finish() {
  if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

}  // namespace edo::cli
