#include "edo/gui/format.h"

#include <QLocale>

#include <cmath>

#include "edo/model/profile_summary.h"

namespace edo::gui {

QString format_bytes(uint64_t bytes) { return QString::fromStdString(model::format_bytes(bytes)); }

QString format_count(uint64_t n) {
  // Fixed "," grouping: the dashboard's screenshots and tests read the same on every locale.
  QString digits = QString::number(n);
  for (int i = digits.size() - 3; i > 0; i -= 3) digits.insert(i, QLatin1Char(','));
  return digits;
}

QString format_share(double share, int decimals) {
  if (!std::isfinite(share)) return QStringLiteral("–");
  return QString::number(100.0 * share, 'f', decimals) + QStringLiteral("%");
}

QString format_duration_ns(double ns) {
  if (!std::isfinite(ns) || ns < 0) return QStringLiteral("–");
  if (ns < 1e3) return QString::number(ns, 'f', 0) + QStringLiteral(" ns");
  if (ns < 1e6) return QString::number(ns / 1e3, 'f', ns < 1e4 ? 2 : 1) + QStringLiteral(" µs");
  if (ns < 1e9) return QString::number(ns / 1e6, 'f', ns < 1e7 ? 2 : 1) + QStringLiteral(" ms");
  const double s = ns / 1e9;
  if (s < 120) return QString::number(s, 'f', s < 10 ? 2 : 1) + QStringLiteral(" s");
  const auto total = static_cast<int64_t>(std::llround(s));
  if (total < 3600) {
    return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60, 2, 10, QLatin1Char('0'));
  }
  return QStringLiteral("%1 h %2 min").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString format_change(double before, double after) {
  if (before == after) return QStringLiteral("=");
  if (before == 0) return QStringLiteral("new");
  const double pct = 100.0 * (after - before) / before;
  return (pct >= 0 ? QStringLiteral("+") : QString()) + QString::number(pct, 'f', 1) + QStringLiteral("%");
}

QString format_share_change(double before, double after) {
  if (before == after) return QStringLiteral("=");
  const double pt = 100.0 * (after - before);
  return (pt >= 0 ? QStringLiteral("+") : QString()) + QString::number(pt, 'f', 1) + QStringLiteral(" pt");
}

AxisUnit byte_unit(double max_bytes) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double divisor = 1.0;
  int unit = 0;
  while (max_bytes / divisor >= 1024.0 && unit < 5) {
    divisor *= 1024.0;
    ++unit;
  }
  return {divisor, QString::fromLatin1(names[unit])};
}

AxisUnit time_unit(double max_seconds) {
  if (max_seconds >= 1.0 || max_seconds <= 0.0) return {1.0, QStringLiteral("s")};
  if (max_seconds >= 1e-3) return {1e-3, QStringLiteral("ms")};
  if (max_seconds >= 1e-6) return {1e-6, QStringLiteral("µs")};
  return {1e-9, QStringLiteral("ns")};
}

}  // namespace edo::gui
