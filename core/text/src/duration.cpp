#include "edo/text/duration.h"

#include <cmath>
#include <cstdio>

namespace edo {

namespace {

// x > 0 rounded to three significant digits.
double round3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", x);
  return std::strtod(buf, nullptr);
}

}  // namespace

std::string format_duration_us(double us, bool sign) {
  if (!std::isfinite(us)) return "-";
  const double a = std::fabs(us);
  if (round3(a) == 0) return "0 us";
  // Pick the unit on the rounded value: 999.96 us is "1.00 ms", not "1000 us".
  const char* unit = "us";
  double v = round3(a);
  if (v >= 1e6) {
    v = round3(a / 1e6);
    unit = "s";
  } else if (v >= 1e3) {
    v = round3(a / 1e3);
    unit = "ms";
  }
  char buf[48];
  const char* s = us < 0 ? "-" : sign ? "+" : "";
  if (v >= 100) std::snprintf(buf, sizeof buf, "%s%.0f %s", s, v, unit);
  else if (v >= 10) std::snprintf(buf, sizeof buf, "%s%.1f %s", s, v, unit);
  else if (v >= 1) std::snprintf(buf, sizeof buf, "%s%.2f %s", s, v, unit);
  else std::snprintf(buf, sizeof buf, "%s%.3g %s", s, v, unit);
  return buf;
}

}  // namespace edo
