// Building blocks every dashboard chart uses, so that all of them read the same way: titled
// axes with units, explicit ranges (Qt Charts' automatic ranges depend on the order series
// were added), log axes where the data spans decades, one palette, no OpenGL.
#pragma once

#include <QChart>
#include <QChartView>
#include <QColor>
#include <QLogValueAxis>
#include <QValueAxis>

#include <utility>

namespace edo::gui::charts {

QChart* make_chart(const QString& title);
QChartView* make_view(QChart* chart, QWidget* parent = nullptr);

// A linear axis over [min, max] with `ticks` ticks; labels printed with `format` (printf).
QValueAxis* linear_axis(const QString& title, double min, double max, int ticks = 6, const QString& format = QStringLiteral("%.3g"));
// A base-10 log axis over [min, max] (both > 0, rounded out to whole decades).
QLogValueAxis* log_axis(const QString& title, double min, double max, const QString& format = QStringLiteral("%g"));

// The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= v, for an axis's
// end; 1 for v <= 0.
double nice_ceiling(double v);
// The smallest tick step (1, 2, 2.5, 5 x 10^k) >= v.
double nice_step(double v);
// [10^floor(log10 lo), 10^ceil(log10 hi)] for lo, hi > 0.
std::pair<double, double> decades(double lo, double hi);
// Whether values in [lo, hi] span more than two decades (use a log axis).
bool spans_decades(double lo, double hi);

QColor series_color(int i);
QColor other_color();

// A chart with nothing to show says why in its title area.
void show_empty(QChart* chart, const QString& why);

}  // namespace edo::gui::charts
