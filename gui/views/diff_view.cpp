#include "diff_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QLegend>
#include <QPushButton>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

#include "chart_util.h"
#include "edo/gui/diff_model.h"
#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/recording_loader.h"

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
  splitter->addWidget(tree_);
  splitter->addWidget(chart_view_);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
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
  header_->setText(tr("<b>before</b> %1<br><b>after</b> %2<br>peak memory %3 → %4 · table memory %5 → %6")
                       .arg(other_->path.toHtmlEscaped(), open_->path.toHtmlEscaped())
                       .arg(format_bytes(static_cast<uint64_t>(std::max<int64_t>(diff->peak_before, 0))))
                       .arg(format_bytes(static_cast<uint64_t>(std::max<int64_t>(diff->peak_after, 0))))
                       .arg(format_bytes(diff->memory_before.total_bytes()), format_bytes(diff->memory_after.total_bytes())));
  Q_EMIT diffReady();
}

}  // namespace edo::gui
