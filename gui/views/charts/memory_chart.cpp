#include "memory_chart.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QHorizontalStackedBarSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>

#include <algorithm>

#include "chart_util.h"
#include "edo/gui/format.h"
#include "edo/gui/recording/memory_timeline.h"

namespace edo::gui {

QChart* make_timeline_chart(const StackedTimeline& tl, const QString& session_label) {
  QChart* chart = charts::make_chart(QObject::tr("Device memory over time, by table — %1").arg(session_label));
  const AxisUnit bytes = byte_unit(static_cast<double>(std::max<int64_t>(tl.peak_bytes, 1)));
  const AxisUnit time = time_unit(tl.duration_s);
  const double y_max = charts::nice_ceiling(static_cast<double>(tl.peak_bytes) * 1.08 / bytes.divisor);
  const double x_max = std::max(tl.duration_s / time.divisor, 1e-9);
  auto* x = charts::linear_axis(QObject::tr("time since the process started (%1)").arg(time.name), 0.0, x_max, 7);
  auto* y = charts::linear_axis(QObject::tr("device memory (%1)").arg(bytes.name), 0.0, y_max, 6);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  // Stacked steps: each series' upper edge is the running sum of the series below it.
  const size_t n = tl.time_s.size();
  std::vector<double> below(n, 0.0);
  QLineSeries* previous = nullptr;
  for (size_t s = 0; s < tl.series.size(); ++s) {
    // Owned by the chart: "The QAreaSeries does not own the upper or lower series, but the
    // ownership stays with the caller" (QAreaSeries::QAreaSeries, Qt Charts docs); as children
    // of the chart they go after its series (~QChart deletes those first), never before.
    auto* upper = new QLineSeries(chart);
    QList<QPointF> points;
    points.reserve(static_cast<qsizetype>(2 * n));
    std::vector<double> top(n);
    for (size_t j = 0; j < n; ++j) top[j] = below[j] + tl.bytes[s][j];
    for (size_t j = 0; j < n; ++j) {
      const double t = tl.time_s[j] / time.divisor;
      if (j > 0) points.append(QPointF(t, top[j - 1] / bytes.divisor));
      points.append(QPointF(t, top[j] / bytes.divisor));
    }
    upper->replace(points);
    auto* area = new QAreaSeries(upper, previous);
    area->setName(QString::fromStdString(tl.series[s]));
    const bool other = tl.series[s] == kOtherSeries;
    const QColor color = other ? charts::other_color() : charts::series_color(static_cast<int>(s));
    area->setColor(color);
    area->setBorderColor(color.darker(130));
    chart->addSeries(area);
    area->attachAxis(x);
    area->attachAxis(y);
    below = std::move(top);
    previous = upper;
  }

  // The peak: a marker with its own label beside it (not in the legend, where long table
  // names would squeeze it out).
  auto* peak = new QScatterSeries();
  const QString peak_text = QObject::tr("peak %1 at %2 %3")
                                .arg(format_bytes(static_cast<uint64_t>(tl.peak_bytes)))
                                .arg(tl.peak_time_s / time.divisor, 0, 'f', tl.peak_time_s / time.divisor < 10 ? 2 : 1)
                                .arg(time.name);
  peak->setName(peak_text);
  peak->setPointLabelsFormat(peak_text);  // no @xPoint/@yPoint tags: the text as it is
  peak->setPointLabelsVisible(true);
  peak->setPointLabelsClipping(false);
  QFont label_font = peak->pointLabelsFont();
  label_font.setBold(true);
  peak->setPointLabelsFont(label_font);
  peak->setPointLabelsColor(QColor(0xc0, 0x20, 0x20));
  peak->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
  peak->setMarkerSize(13);
  peak->setColor(QColor(0xc0, 0x20, 0x20));
  peak->setBorderColor(Qt::white);
  peak->append(tl.peak_time_s / time.divisor, static_cast<double>(tl.peak_bytes) / bytes.divisor);
  chart->addSeries(peak);
  peak->attachAxis(x);
  peak->attachAxis(y);
  for (QLegendMarker* m : chart->legend()->markers(peak)) m->setVisible(false);
  return chart;
}

QChart* make_table_bytes_chart(const Recording& rec) {
  bool any_device = false;
  for (const auto& t : rec.tables) any_device |= t.device.rfind("cuda", 0) == 0;
  QChart* chart = charts::make_chart(
      any_device ? QObject::tr("Memory by table — no CUDA memory timeline in this recording: the tables' recorded bytes")
                 : QObject::tr("Host tables' memory by table (weights + optimizer state + gradients) — no CUDA memory timeline in this recording"));
  const std::vector<TableBytes> stack = table_bytes_stack(rec.tables);
  if (stack.empty()) {
    charts::show_empty(chart, QObject::tr("no tables with memory recorded"));
    return chart;
  }
  uint64_t total = 0;
  for (const auto& s : stack) total += s.bytes;
  const AxisUnit unit = byte_unit(static_cast<double>(total));
  auto* series = new QHorizontalStackedBarSeries();
  series->setBarWidth(0.6);
  for (size_t i = 0; i < stack.size(); ++i) {
    auto* set = new QBarSet(QStringLiteral("%1 (%2)").arg(QString::fromStdString(stack[i].name), format_bytes(stack[i].bytes)));
    *set << static_cast<double>(stack[i].bytes) / unit.divisor;
    const bool other = stack[i].name == kOtherSeries;
    set->setColor(other ? charts::other_color() : charts::series_color(static_cast<int>(i)));
    set->setBorderColor(Qt::white);
    series->append(set);
  }
  chart->addSeries(series);
  auto* categories = new QBarCategoryAxis();
  categories->append(QObject::tr("all tables\n%1").arg(format_bytes(total)));
  categories->setTruncateLabels(false);
  chart->addAxis(categories, Qt::AlignLeft);
  series->attachAxis(categories);
  const double max = charts::nice_ceiling(static_cast<double>(total) / unit.divisor);
  auto* x = charts::linear_axis(QObject::tr("table memory (%1)").arg(unit.name), 0.0, max, 6);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  chart->legend()->setAlignment(Qt::AlignRight);
  return chart;
}

}  // namespace edo::gui
