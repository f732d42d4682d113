#include "chart_util.h"

#include <QFont>
#include <QGraphicsLayout>
#include <QLegend>
#include <QPainter>

#include <cmath>

namespace edo::gui::charts {

QChart* make_chart(const QString& title) {
  auto* chart = new QChart();
  chart->setTitle(title);
  QFont f = chart->titleFont();
  f.setBold(true);
  f.setPointSizeF(std::max(10.0, f.pointSizeF()));
  chart->setTitleFont(f);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->layout()->setContentsMargins(0, 0, 0, 0);
  chart->setBackgroundRoundness(0);
  return chart;
}

QChartView* make_view(QChart* chart, QWidget* parent) {
  auto* view = new QChartView(chart, parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumSize(220, 170);
  return view;
}

namespace {
void style_axis(QAbstractAxis* axis, const QString& title) {
  axis->setTitleText(title);
  QFont f = axis->titleFont();
  f.setBold(false);
  f.setPointSizeF(std::max(9.0, f.pointSizeF()));
  axis->setTitleFont(f);
  QFont l = axis->labelsFont();
  l.setPointSizeF(std::max(8.5, l.pointSizeF()));
  axis->setLabelsFont(l);
}
}  // namespace

QValueAxis* linear_axis(const QString& title, double min, double max, int ticks, const QString& format) {
  auto* axis = new QValueAxis();
  style_axis(axis, title);
  if (!(max > min)) max = min + 1.0;
  axis->setRange(min, max);
  // Ticks at round numbers from an anchor of 0 (a range of 0..4.45 s reads 0, 1, 2, 3, 4),
  // about `ticks` of them; the range itself stays exactly as given.
  const double step = nice_step((max - min) / std::max(ticks, 1));
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0.0);
  axis->setTickInterval(step);
  if (format == QStringLiteral("%.3g")) {
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    axis->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
  } else {
    axis->setLabelFormat(format);
  }
  return axis;
}

QLogValueAxis* log_axis(const QString& title, double min, double max, const QString& format) {
  auto* axis = new QLogValueAxis();
  style_axis(axis, title);
  axis->setBase(10.0);
  auto [lo, hi] = decades(min, max);
  // A hair beyond the decades: Qt rounds log10 of an exact decade so that its label can go
  // missing (0.1 drawn without a "0.1").
  axis->setRange(lo * (1 - 1e-9), hi * (1 + 1e-9));
  axis->setLabelFormat(format);
  axis->setMinorTickCount(8);  // 2..9 between decades
  return axis;
}

namespace {
double smallest_multiple_at_least(double v, std::initializer_list<double> mantissas) {
  if (!(v > 0) || !std::isfinite(v)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : mantissas)
    if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10.0 * p;
}
}  // namespace

double nice_ceiling(double v) { return smallest_multiple_at_least(v, {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}); }

double nice_step(double v) { return smallest_multiple_at_least(v, {1.0, 2.0, 2.5, 5.0, 10.0}); }

std::pair<double, double> decades(double lo, double hi) {
  if (!(lo > 0)) lo = 1.0;
  if (!(hi > lo)) hi = lo * 10.0;
  double a = std::pow(10.0, std::floor(std::log10(lo) + 1e-12));
  double b = std::pow(10.0, std::ceil(std::log10(hi) - 1e-12));
  if (b <= a) b = a * 10.0;
  return {a, b};
}

bool spans_decades(double lo, double hi) { return lo > 0 && hi / lo > 100.0; }

QColor series_color(int i) {
  // Tableau 10: distinguishable, colour-blind friendlier than Qt's default theme.
  static const QColor palette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                   QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                                   QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f)};
  return palette[static_cast<size_t>(i) % (sizeof palette / sizeof palette[0])];
}

QColor other_color() { return QColor(0xba, 0xb0, 0xac); }

void show_empty(QChart* chart, const QString& why) {
  chart->setTitle(chart->title() + QStringLiteral("<br><span style='font-weight:normal'>") + why + QStringLiteral("</span>"));
  chart->legend()->hide();
}

}  // namespace edo::gui::charts
