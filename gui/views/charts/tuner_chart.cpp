#include "tuner_chart.h"

#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>

#include "chart_util.h"
#include "edo/gui/format.h"

namespace edo::gui {

QChart* make_pareto_chart(const model::TuneResult& r) {
  QChart* chart = charts::make_chart(QObject::tr("Plans: device memory vs step time"));
  std::vector<std::pair<double, double>> points;  // (bytes, us)
  for (const auto& [bytes, us] : r.frontier)
    if (std::isfinite(us)) points.emplace_back(static_cast<double>(bytes), us);
  if (points.empty() && !r.feasible) {
    charts::show_empty(chart, QObject::tr("no plan measured yet"));
    return chart;
  }
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  auto extend = [&](double x, double y) {
    if (x > 0) x_lo = std::min(x_lo, x);
    x_hi = std::max(x_hi, x);
    if (y > 0) y_lo = std::min(y_lo, y);
    y_hi = std::max(y_hi, y);
  };
  for (const auto& [x, y] : points) extend(x, y);
  extend(static_cast<double>(r.baseline_device_bytes), r.baseline_step_us);
  if (r.feasible) extend(static_cast<double>(r.plan_device_bytes), r.plan_step_us);
  // The frontier's bytes are over all the plan's devices; the budget is per device.
  const double budget_all = static_cast<double>(r.budget_bytes) * std::max<uint32_t>(1, r.devices);
  if (r.budget_bytes > 0) extend(budget_all, y_lo);
  if (!(x_lo < INFINITY)) x_lo = 1;
  if (!(y_lo < INFINITY)) y_lo = 1;

  const AxisUnit bytes = byte_unit(x_hi);
  const AxisUnit time = time_unit(y_hi * 1e-6);
  const double xs = 1.0 / bytes.divisor, ys = 1e-6 / time.divisor;  // bytes -> unit, us -> unit
  const QString x_title = QObject::tr("device memory of the tables (%1)").arg(bytes.name);
  const QString y_title = QObject::tr("step time (%1)").arg(time.name);
  QAbstractAxis* x;
  QAbstractAxis* y;
  // Memory on a log axis from one decade on (not two, as elsewhere): the frontier's knee sits
  // at a small fraction of the recorded bytes and would be crowded against the left edge.
  if (x_lo > 0 && x_hi / x_lo > 10) x = charts::log_axis(x_title, x_lo * xs, x_hi * xs);
  else x = charts::linear_axis(x_title, 0.0, charts::nice_ceiling(x_hi * xs * 1.05), 6);
  if (charts::spans_decades(y_lo, y_hi)) y = charts::log_axis(y_title, y_lo * ys, y_hi * ys);
  else y = charts::linear_axis(y_title, 0.0, charts::nice_ceiling(y_hi * ys * 1.1), 6);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto attach = [&](QAbstractSeries* s) {
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  };

  auto* frontier = new QLineSeries();
  frontier->setName(QObject::tr("Pareto frontier"));
  QPen pen(charts::series_color(0));
  pen.setWidthF(1.5);
  frontier->setPen(pen);
  frontier->setPointsVisible(true);
  for (const auto& [bx, by] : points) frontier->append(bx * xs, by * ys);
  attach(frontier);

  auto marker = [&](const QString& name, double bx, double by, QColor color, QScatterSeries::MarkerShape shape, qreal size) {
    auto* s = new QScatterSeries();
    s->setName(name);
    s->setMarkerShape(shape);
    s->setMarkerSize(size);
    s->setColor(color);
    s->setBorderColor(Qt::white);
    s->append(bx * xs, by * ys);
    attach(s);
  };
  marker(QObject::tr("as recorded"),
         static_cast<double>(r.baseline_device_bytes), r.baseline_step_us, charts::other_color().darker(140),
         QScatterSeries::MarkerShapeRectangle, 12);
  if (r.feasible)
    marker(QObject::tr("plan"),
           static_cast<double>(r.plan_device_bytes), r.plan_step_us, QColor(0xc0, 0x20, 0x20), QScatterSeries::MarkerShapeStar, 20);

  if (r.budget_bytes > 0) {
    auto* budget = new QLineSeries();
    budget->setName(QObject::tr("budget"));
    QPen bpen(QColor(0x59, 0xa1, 0x4f));
    bpen.setStyle(Qt::DashLine);
    bpen.setWidthF(2.0);
    budget->setPen(bpen);
    const double bx = budget_all * xs;
    double lo = 0, hi = 0;
    if (auto* v = qobject_cast<QValueAxis*>(y)) lo = v->min(), hi = v->max();
    if (auto* l = qobject_cast<QLogValueAxis*>(y)) lo = l->min(), hi = l->max();
    budget->append(bx, lo);
    budget->append(bx, hi);
    attach(budget);
  }
  return chart;
}

}  // namespace edo::gui
