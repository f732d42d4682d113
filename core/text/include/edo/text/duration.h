// Step times as people read them: "850 us", "13.0 ms", "1.25 s" (three significant digits,
// the unit chosen so the number stays below 1000).
#pragma once

#include <string>

namespace edo {

// `us` microseconds as text: three significant digits in us, ms or s ("0.412 us", "85.3 us",
// "13.0 ms", "2.50 s"); with `sign`, a leading '+' or '-' (a change: "+1.20 ms"; zero is
// "0 us"); without it a negative number still starts with "-". NaN and infinities are "-".
std::string format_duration_us(double us, bool sign = false);

}  // namespace edo
