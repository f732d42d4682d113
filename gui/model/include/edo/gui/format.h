// How the dashboard writes numbers: bytes, counts, shares, durations, and the unit an axis
// uses for a range of values (so that an axis reads "GiB" with ticks 0..24, not 2.5e10).
#pragma once

#include <QString>

#include <cstdint>

namespace edo::gui {

QString format_bytes(uint64_t bytes);              // "1.50 GiB", "512 B" (as `edo report`)
QString format_count(uint64_t n);                  // "1,234,567"
QString format_share(double share, int decimals = 1);  // 0.123 -> "12.3%"
QString format_duration_ns(double ns);             // "850 ns", "12.4 ms", "3.20 s", "4 min 05 s"
// A signed relative change: "+12.5%", "-3.0%"; "new" from 0, "=" when equal.
QString format_change(double before, double after);
// A change of a share in percentage points: "+1.5 pt".
QString format_share_change(double before, double after);

// The unit an axis shows: values are divided by `divisor` and the title carries `name`.
struct AxisUnit {
  double divisor = 1.0;
  QString name;
};
// Binary byte units (B, KiB, MiB, GiB, TiB) chosen so that `max_bytes` reads 1..1024.
AxisUnit byte_unit(double max_bytes);
// Time units (ns, µs, ms, s) chosen so that `max_seconds` reads 1..1000 (s above 1 s).
AxisUnit time_unit(double max_seconds);

}  // namespace edo::gui
