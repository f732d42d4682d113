#include "detail_charts.h"

#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>

#include "chart_util.h"
#include "edo/gui/format.h"

namespace edo::gui {

namespace {

QLineSeries* line(const QString& name, const std::vector<XY>& pts, QColor color, double x_scale = 1.0, double y_scale = 1.0) {
  auto* s = new QLineSeries();
  s->setName(name);
  QList<QPointF> list;
  list.reserve(static_cast<qsizetype>(pts.size()));
  for (const auto& p : pts) list.append(QPointF(p.x * x_scale, p.y * y_scale));
  s->replace(list);
  QPen pen(color);
  pen.setWidthF(2.0);
  s->setPen(pen);
  return s;
}

void attach(QChart* chart, QAbstractSeries* s, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
}

}  // namespace

QChart* make_rank_frequency_chart(const TableDetail& d) {
  QChart* chart = charts::make_chart(QObject::tr("Rank-frequency (log-log)"));
  if (d.rank_frequency.empty()) {
    charts::show_empty(chart, QObject::tr("no lookups recorded"));
    return chart;
  }
  double y_lo = INFINITY, y_hi = 0.0;
  for (const auto& p : d.rank_frequency) {
    if (p.y > 0) y_lo = std::min(y_lo, p.y);
    y_hi = std::max(y_hi, p.y);
  }
  for (const auto& p : d.zipf_fit) {
    if (p.y > 0) y_lo = std::min(y_lo, p.y);
    y_hi = std::max(y_hi, p.y);
  }
  auto* x = charts::log_axis(d.sketched ? QObject::tr("rank of row by reads (top-K of a sketched table)")
                                        : QObject::tr("rank of row by reads"),
                             1.0, static_cast<double>(std::max<uint64_t>(d.ranked_rows, 10)));
  auto* y = charts::log_axis(QObject::tr("reads per row (lookups)"), y_lo, y_hi);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto* observed = new QScatterSeries();
  observed->setName(QObject::tr("observed (mean of each log bin)"));
  observed->setMarkerSize(6);
  observed->setColor(charts::series_color(0));
  observed->setBorderColor(charts::series_color(0));
  for (const auto& p : d.rank_frequency)
    if (p.y > 0) observed->append(p.x, p.y);
  attach(chart, observed, x, y);
  if (d.zipf_valid && !d.zipf_fit.empty()) {
    auto* fit = line(QObject::tr("Zipf fit α = %1 (error %2)").arg(d.zipf_alpha, 0, 'f', 2).arg(d.zipf_fit_error, 0, 'f', 3),
                     d.zipf_fit, charts::series_color(2));
    QPen pen = fit->pen();
    pen.setStyle(Qt::DashLine);
    fit->setPen(pen);
    attach(chart, fit, x, y);
  }
  return chart;
}

QChart* make_coverage_chart(const TableDetail& d) {
  QChart* chart = charts::make_chart(QObject::tr("Coverage: share of lookups taken by the hottest rows"));
  if (d.coverage.empty()) {
    charts::show_empty(chart, QObject::tr("no lookups recorded"));
    return chart;
  }
  auto* x = charts::log_axis(QObject::tr("hottest rows (% of the table's rows)"), 100.0 * d.coverage.front().x, 100.0);
  auto* y = charts::linear_axis(QObject::tr("share of lookups (%)"), 0.0, 100.0, 6, QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, line(QObject::tr("coverage"), d.coverage, charts::series_color(0), 100.0, 100.0), x, y);
  chart->legend()->hide();
  return chart;
}

QChart* make_lru_chart(const TableDetail& d) {
  QChart* chart = charts::make_chart(QObject::tr("LRU cache hit rate vs cache size"));
  if (d.lru.empty()) {
    charts::show_empty(chart, QObject::tr("no stack distances recorded (EDO_LRU=0, or no lookups)"));
    return chart;
  }
  const double lo = std::max(1.0, d.lru.front().x), hi = std::max(lo * 10, d.lru.back().x);
  auto* x = charts::log_axis(QObject::tr("cache size (rows)"), lo, hi);
  auto* y = charts::linear_axis(QObject::tr("hit rate (%)"), 0.0, 100.0, 6, QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, line(d.lru_union.empty() ? QObject::tr("LRU hit rate") : QObject::tr("each rank its own cache (data parallel)"),
                     d.lru, charts::series_color(1), 1.0, 100.0),
         x, y);
  // A table read on several ranks: one cache for all their lookups as well (docs/multi-node.md).
  if (!d.lru_union.empty())
    attach(chart, line(QObject::tr("one cache for all ranks (model parallel, ranks in lock-step)"), d.lru_union,
                       charts::series_color(2), 1.0, 100.0),
           x, y);
  if (d.row_bytes > 0) {
    // The same sizes in bytes of weights, on a second axis: cost in memory of each cache size.
    const double rb = static_cast<double>(d.row_bytes);
    const AxisUnit unit = byte_unit(x->max() * rb);
    auto* bytes = new QLogValueAxis();
    bytes->setBase(10.0);
    bytes->setTitleText(QObject::tr("cache size (%1 of weights, %2 per row)").arg(unit.name, format_bytes(d.row_bytes)));
    bytes->setTitleFont(x->titleFont());
    bytes->setLabelsFont(x->labelsFont());
    bytes->setLabelFormat(QStringLiteral("%.3g"));
    bytes->setMinorTickCount(0);
    bytes->setRange(x->min() * rb / unit.divisor, x->max() * rb / unit.divisor);
    bytes->setGridLineVisible(false);
    chart->addAxis(bytes, Qt::AlignTop);
  }
  if (d.lru_union.empty()) chart->legend()->hide();
  return chart;
}

QChart* make_drift_chart(const TableDetail& d) {
  QChart* chart = charts::make_chart(QObject::tr("Hot-set drift: overlap with the previous window"));
  if (d.drift.empty()) {
    charts::show_empty(chart, QObject::tr("fewer than two time windows recorded"));
    return chart;
  }
  // A window's end is one on each side, so that the first and last dots are not cut in half.
  const double x0 = d.drift.front().x - 1, x1 = std::max(d.drift.back().x + 1, x0 + 2);
  auto* x = charts::linear_axis(QObject::tr("drift window (one per EDO_WINDOW_STEPS steps, or per flush)"), x0, x1, 6,
                                QStringLiteral("%.0f"));
  auto* y = charts::linear_axis(QObject::tr("Jaccard overlap (%)"), 0.0, 100.0, 6, QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto* s = line(QObject::tr("hot-set overlap (mean %1)").arg(format_share(d.mean_drift)), d.drift, charts::series_color(4), 1.0, 100.0);
  attach(chart, s, x, y);
  if (d.drift.size() <= 60) {
    auto* dots = new QScatterSeries();
    dots->setMarkerSize(6);
    dots->setColor(charts::series_color(4));
    dots->setBorderColor(charts::series_color(4));
    for (const auto& p : d.drift) dots->append(p.x, 100.0 * p.y);
    attach(chart, dots, x, y);
    chart->legend()->markers(dots).first()->setVisible(false);
  }
  return chart;
}

}  // namespace edo::gui
