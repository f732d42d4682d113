// Progress lines on stderr for long-running commands: redrawn in place on a terminal,
// at most every 10 % otherwise (so CI logs stay short).
#pragma once

#include <chrono>
#include <string>

namespace edo::cli {

class Progress {
 public:
  explicit Progress(std::string label);
  // Reports `done` of `total` units of work; cheap enough to call per batch.
  void update(double done, double total, const std::string& detail = "");
  // Clears the in-place line.
  void finish();

 private:
  std::string label_;
  bool tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace edo::cli
