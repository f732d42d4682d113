#include "diff_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLineSeries>
#include <QLegend>
#include <QPushButton>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "chart_util.h"
#include "edo/gui/diff/diff_model.h"
#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/recording/recording_loader.h"

namespace edo::gui {

namespace {

QChart* make_bytes_chart(const RecordingDiff& d) {
  QChart* chart = charts::make_chart(QObject::tr("Bytes per table, before and after"));
  // The tables with the most bytes on either side; the metric list's first entry is bytes.
  std::vector<const TableDiff*> rows;
  for (const auto& t : d.tables) rows.push_back(&t);
  auto bytes_of = [](const TableDiff* t) {
    return std::max(t->before.empty() ? 0.0 : t->before[0], t->after.empty() ? 0.0 : t->after[0]);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const TableDiff* a, const TableDiff* b) { return bytes_of(a) > bytes_of(b); });
  if (rows.size() > 10) rows.resize(10);
  if (rows.empty()) {
    charts::show_empty(chart, QObject::tr("no tables in either recording"));
    return chart;
  }
  double max = 0.0;
  for (const auto* t : rows) max = std::max(max, bytes_of(t));
  const AxisUnit unit = byte_unit(max);
  auto* before = new QBarSet(QObject::tr("before"));
  auto* after = new QBarSet(QObject::tr("after"));
  before->setColor(charts::other_color());
  after->setColor(charts::series_color(0));
  QStringList names;
  // Horizontal bars list categories bottom-up: add in reverse so the biggest is on top.
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    const TableDiff* t = *it;
    QString name = QString::fromStdString(t->name);
    if (name.size() > 32) name = QStringLiteral("…") + name.right(31);
    names << name;
    *before << (t->before.empty() ? 0.0 : t->before[0] / unit.divisor);
    *after << (t->after.empty() ? 0.0 : t->after[0] / unit.divisor);
  }
  auto* series = new QHorizontalBarSeries();
  series->setBarWidth(0.8);
  // Within a category too the first set is drawn lowest: "after" first puts "before" on top,
  // read before "after"; the legend, reversed, still says "before" first.
  series->append(after);
  series->append(before);
  chart->addSeries(series);
  chart->legend()->setReverseMarkers(true);
  auto* y = new QBarCategoryAxis();
  y->append(names);
  y->setTruncateLabels(false);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(y);
  auto* x = charts::linear_axis(QObject::tr("table memory (%1): weights + optimizer state + gradients").arg(unit.name), 0.0,
                                charts::nice_ceiling(max / unit.divisor), 6);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(x);
  return chart;
}

// One recording's loss curve as a line (its points are downsampled already: LossCurve).
QLineSeries* loss_series(const LossCurve& c, const QString& name, const QColor& color) {
  auto* line = new QLineSeries();
  line->setName(c.first_nonfinite_step ? QObject::tr("%1 (not finite from step %2)").arg(name).arg(*c.first_nonfinite_step) : name);
  QPen pen(color);
  pen.setWidthF(1.5);
  line->setPen(pen);
  QList<QPointF> points;
  points.reserve(static_cast<int>(c.step.size()));
  for (size_t i = 0; i < c.step.size(); ++i) points.append(QPointF(c.step[i], c.loss[i]));
  line->replace(points);
  return line;
}

// Both recordings' training losses over the steps ("before" grey, "after" in colour), with a
// dashed red line where a curve's loss first stopped being finite. nullptr when neither has a loss.
QChart* make_loss_chart(const RecordingDiff& d) {
  if (d.loss_before.empty() && d.loss_after.empty()) return nullptr;
  QChart* chart = charts::make_chart(QObject::tr("Training loss per step, before and after"));
  double x_max = 1.0, y_lo = HUGE_VAL, y_hi = -HUGE_VAL;
  for (const LossCurve* c : {&d.loss_before, &d.loss_after}) {
    for (size_t i = 0; i < c->step.size(); ++i) {
      x_max = std::max(x_max, c->step[i]);
      y_lo = std::min(y_lo, c->loss[i]);
      y_hi = std::max(y_hi, c->loss[i]);
    }
    if (c->first_nonfinite_step) x_max = std::max(x_max, static_cast<double>(*c->first_nonfinite_step));
  }
  if (y_lo > y_hi) y_lo = 0.0, y_hi = 1.0;  // no finite loss at all
  const double pad = std::max((y_hi - y_lo) * 0.05, 1e-9);
  auto* x = charts::linear_axis(QObject::tr("step"), 0.0, charts::nice_ceiling(x_max), 6, QStringLiteral("%.0f"));
  auto* y = charts::linear_axis(QObject::tr("loss"), y_lo - pad, y_hi + pad, 6);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  const std::pair<const LossCurve*, QString> sides[] = {{&d.loss_before, QObject::tr("before")}, {&d.loss_after, QObject::tr("after")}};
  for (const auto& [c, name] : sides) {
    if (c->empty()) continue;
    const QColor color = c == &d.loss_before ? charts::other_color() : charts::series_color(0);
    QLineSeries* line = loss_series(*c, name, color);
    chart->addSeries(line);
    line->attachAxis(x);
    line->attachAxis(y);
    if (!c->first_nonfinite_step) continue;
    // A dashed vertical line at the first non-finite step, in the curve's colour.
    auto* mark = new QLineSeries();
    mark->setName(QObject::tr("%1: first non-finite loss").arg(name));
    QPen pen(QColor(0xd6, 0x27, 0x28));
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.5);
    mark->setPen(pen);
    const double at = static_cast<double>(*c->first_nonfinite_step);
    mark->append(at, y_lo - pad);
    mark->append(at, y_hi + pad);
    chart->addSeries(mark);
    mark->attachAxis(x);
    mark->attachAxis(y);
  }
  return chart;
}

}  // namespace

DiffView::DiffView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout();
  header_ = new QLabel(this);
  header_->setWordWrap(true);
  header_->setTextFormat(Qt::RichText);
  open_button_ = new QPushButton(tr("Open a recording to compare…"), this);
  bar->addWidget(header_, 1);
  bar->addWidget(open_button_);
  layout->addLayout(bar);
  connect(open_button_, &QPushButton::clicked, this, &DiffView::chooseOther);

  model_ = new DiffModel(this);
  auto* splitter = new QSplitter(Qt::Vertical, this);
  tree_ = new QTreeView(splitter);
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  tree_->header()->setSectionResizeMode(DiffModel::kName, QHeaderView::Stretch);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setResizeContentsPrecision(64);
  for (int c = DiffModel::kBefore; c < DiffModel::kColumnCount; ++c) tree_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  chart_view_ = charts::make_view(charts::make_chart(tr("Bytes per table, before and after")), splitter);
  loss_view_ = charts::make_view(charts::make_chart(tr("Training loss per step, before and after")), splitter);
  loss_view_->hide();
  splitter->addWidget(tree_);
  splitter->addWidget(chart_view_);
  splitter->addWidget(loss_view_);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
  splitter->setStretchFactor(2, 3);
  layout->addWidget(splitter, 1);

  loader_ = new RecordingLoader(this);
  connect(loader_, &RecordingLoader::loaded, this, [this](RecordingPtr rec) {
    other_ = std::move(rec);
    recompute();
  });
  connect(loader_, &RecordingLoader::failed, this, &DiffView::failed);
  recompute();
}

QString DiffView::otherPath() const { return other_ ? other_->path : loader_->path(); }

void DiffView::setRecording(RecordingPtr recording) {
  open_ = std::move(recording);
  recompute();
}

void DiffView::openOther(const QString& path) {
  other_.reset();
  header_->setText(tr("Loading %1…").arg(path.toHtmlEscaped()));
  loader_->open(path);
}

void DiffView::recompute() {
  QChart* old = chart_view_->chart();
  if (!open_ || !other_ || !open_->has_statistics) {
    model_->setDiff(nullptr);
    loss_view_->hide();
    diff_before_.clear();
    diff_after_.clear();
    QChart* chart = charts::make_chart(tr("Bytes per table, before and after"));
    charts::show_empty(chart, tr("open a second recording to compare (File ▸ Compare with…)"));
    chart_view_->setChart(chart);
    delete old;
    if (!loader_->busy())
      header_->setText(open_ ? tr("Compare <b>%1</b> (after) with an earlier recording of the same job (before), e.g. before a change.")
                                   .arg(open_->path.toHtmlEscaped())
                             : tr("Open a recording first."));
    return;
  }
  auto diff = std::make_shared<RecordingDiff>(diff_recordings(*other_, *open_));
  diff_before_ = other_->path;
  diff_after_ = open_->path;
  model_->setDiff(diff);
  tree_->expandAll();
  chart_view_->setChart(make_bytes_chart(*diff));
  delete old;
  if (QChart* losses = make_loss_chart(*diff)) {
    QChart* old_losses = loss_view_->chart();
    loss_view_->setChart(losses);
    delete old_losses;
    loss_view_->show();
  } else {
    loss_view_->hide();
  }
  header_->setText(tr("<b>before</b> %1<br><b>after</b> %2<br>peak memory %3 → %4 · table memory %5 → %6")
                       .arg(other_->path.toHtmlEscaped(), open_->path.toHtmlEscaped())
                       .arg(format_bytes(static_cast<uint64_t>(std::max<int64_t>(diff->peak_before, 0))))
                       .arg(format_bytes(static_cast<uint64_t>(std::max<int64_t>(diff->peak_after, 0))))
                       .arg(format_bytes(diff->memory_before.total_bytes()), format_bytes(diff->memory_after.total_bytes())));
  Q_EMIT diffReady();
}

}  // namespace edo::gui
