#include "table_detail_view.h"

#include <QChartView>
#include <QComboBox>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QScrollBar>
#include <QLabel>
#include <QMouseEvent>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <cmath>

#include "chart_util.h"
#include "detail_charts.h"
#include "edo/gui/background.h"
#include "edo/gui/format.h"
#include "edo/gui/tables/llm_text.h"
#include "edo/gui/tables/table_fields.h"
#include "edo/gui/tables/top_rows_model.h"
#include "share_bar_delegate.h"

namespace edo::gui {

namespace {
void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}
}  // namespace

TableDetailView::TableDetailView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout();
  picker_ = new QComboBox(this);
  picker_->setMinimumContentsLength(28);
  picker_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  bar->addWidget(new QLabel(tr("Table:"), this));
  bar->addWidget(picker_);
  bar->addWidget(summary_, 1);
  layout->addLayout(bar);

  auto* splitter = new QSplitter(Qt::Horizontal, this);
  auto* grid_host = new QWidget(splitter);
  auto* grid = new QGridLayout(grid_host);
  grid->setContentsMargins(0, 0, 0, 0);
  rank_view_ = charts::make_view(charts::make_chart(tr("Rank-frequency (log-log)")), grid_host);
  coverage_view_ = charts::make_view(charts::make_chart(tr("Coverage")), grid_host);
  lru_view_ = charts::make_view(charts::make_chart(tr("LRU cache hit rate vs cache size")), grid_host);
  drift_view_ = charts::make_view(charts::make_chart(tr("Hot-set drift: overlap with the previous window")), grid_host);
  auto* coverage_box = new QWidget(grid_host);
  auto* coverage_layout = new QVBoxLayout(coverage_box);
  coverage_layout->setContentsMargins(0, 0, 0, 0);
  coverage_layout->setSpacing(2);
  coverage_layout->addWidget(coverage_view_, 1);
  readout_ = new QLabel(coverage_box);
  readout_->setAlignment(Qt::AlignCenter);
  readout_->setWordWrap(true);
  coverage_layout->addWidget(readout_);
  coverage_view_->setMouseTracking(true);
  coverage_view_->viewport()->installEventFilter(this);
  grid->addWidget(rank_view_, 0, 0);
  grid->addWidget(coverage_box, 0, 1);
  grid->addWidget(lru_view_, 1, 0);
  grid->addWidget(drift_view_, 1, 1);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  grid->setRowStretch(0, 1);
  grid->setRowStretch(1, 1);

  auto* rows_host = rows_host_ = new QWidget(splitter);
  auto* rows_layout = new QVBoxLayout(rows_host);
  rows_layout->setContentsMargins(0, 0, 0, 0);
  rows_layout->addWidget(new QLabel(tr("<b>Most-read rows</b>"), rows_host));
  top_rows_model_ = new TopRowsModel(this);
  top_rows_ = new QTableView(rows_host);
  top_rows_->setModel(top_rows_model_);
  top_rows_->verticalHeader()->hide();
  top_rows_->verticalHeader()->setDefaultSectionSize(top_rows_->fontMetrics().height() + 6);
  top_rows_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  top_rows_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  top_rows_->horizontalHeader()->setSectionResizeMode(TopRowsModel::kCumulative, QHeaderView::Stretch);
  // At least 36 digits wide; fitTopRows() widens it to what the rows shown need.
  const int digit = top_rows_->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  rows_host->setMinimumWidth(36 * digit);
  rows_host->setMaximumWidth(56 * digit);
  top_rows_->setItemDelegateForColumn(TopRowsModel::kCumulative, new ShareBarDelegate(top_rows_));
  top_rows_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  top_rows_->setAlternatingRowColors(true);
  rows_layout->addWidget(top_rows_);
  splitter->addWidget(grid_host);
  splitter->addWidget(rows_host);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 0);
  splitter->setCollapsible(1, true);
  layout->addWidget(splitter, 1);

  connect(picker_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    if (!name.isEmpty() && name != current_) showTable(name);
  });
  clearCharts(tr("open a recording"));
}

void TableDetailView::setRecording(RecordingPtr recording) {
  recording_ = std::move(recording);
  {
    const QSignalBlocker block(picker_);
    picker_->clear();
    if (recording_)
      for (const auto& t : recording_->tables) picker_->addItem(QString::fromStdString(t.name));
  }
  const QString keep = current_;
  current_.clear();
  detail_.reset();
  if (!recording_) return clearCharts(tr("open a recording"));
  if (!recording_->has_statistics) return clearCharts(tr("statistics are loading…"));
  if (recording_->tables.empty()) return clearCharts(tr("no embedding tables in this recording"));
  if (keep.isEmpty() || !showTable(keep)) showTable(QString::fromStdString(recording_->tables.front().name));
}

bool TableDetailView::showTable(const QString& name) {
  if (!recording_) return false;
  const model::TableView* t = recording_->find_table(name.toStdString());
  if (!t) return false;
  current_ = name;
  {
    const QSignalBlocker block(picker_);
    picker_->setCurrentText(name);
  }
  if (!recording_->has_statistics) {
    clearCharts(tr("statistics are loading…"));
    return true;
  }
  const stats::TableSummary& s = t->summary;
  summary_->setText(tr("%1 × %2 %3 on %4 · %5 · %6 lookups · %7 unique rows%8 · top 1%: %9")
                        .arg(format_count(t->rows)).arg(t->dim).arg(QString::fromStdString(t->dtype), QString::fromStdString(t->device))
                        .arg(format_bytes(total_bytes(*t))).arg(format_count(s.lookups)).arg(format_count(s.unique_rows))
                        .arg(is_sketched(*t) ? tr(" (estimated: sketched table)") : QString())
                        .arg(format_share(s.coverage_top_1pct)) +
                    tableLlmSummary(recording_->profile, *t));  // activation, LM head (PyTorch)
  readout_->setText(tr("computing…"));
  const int request = ++request_;
  RecordingPtr rec = recording_;
  const std::string key = name.toStdString();
  run_in_background<std::shared_ptr<const TableDetail>>(
      this,
      [rec, key]() -> std::shared_ptr<const TableDetail> {
        try {
          return std::make_shared<const TableDetail>(build_table_detail(*rec->find_table(key)));
        } catch (const std::exception&) {
          return nullptr;  // out of memory: the view says so below
        }
      },
      [this, request](std::shared_ptr<const TableDetail> detail) {
        if (request != request_) return;  // another table was chosen meanwhile
        if (!detail) {
          clearCharts(tr("not enough memory to build this table's charts"));
          Q_EMIT detailReady();
          return;
        }
        setDetail(std::move(detail));
      });
  return true;
}

void TableDetailView::setDetail(std::shared_ptr<const TableDetail> detail) {
  detail_ = std::move(detail);
  replace_chart(rank_view_, make_rank_frequency_chart(*detail_));
  replace_chart(coverage_view_, make_coverage_chart(*detail_));
  replace_chart(lru_view_, make_lru_chart(*detail_));
  replace_chart(drift_view_, make_drift_chart(*detail_));
  top_rows_model_->setDetail(detail_);
  fitTopRows();
  readout_->setText(coverageReadout(0.01) + tr("  (point at the curve to read any share)"));
  Q_EMIT detailReady();
}

void TableDetailView::fitTopRows() {
  QHeaderView* header = top_rows_->horizontalHeader();
  int needed = 2 * top_rows_->frameWidth() + top_rows_->verticalScrollBar()->sizeHint().width();
  for (int c = 0; c < TopRowsModel::kColumnCount; ++c) {
    // (QTableView makes the override protected; QAbstractItemView's is public.)
    const int content = c == TopRowsModel::kCumulative ? 0 : static_cast<QAbstractItemView*>(top_rows_)->sizeHintForColumn(c);
    needed += std::max(header->sectionSizeHint(c), content);
  }
  const int digit = top_rows_->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  rows_host_->setMinimumWidth(std::max(36 * digit, needed));
  rows_host_->setMaximumWidth(std::max(56 * digit, needed));
}

void TableDetailView::clearCharts(const QString& why) {
  detail_.reset();
  for (QChartView* v : {rank_view_, coverage_view_, lru_view_, drift_view_}) {
    QChart* chart = charts::make_chart(v->chart()->title().section(QStringLiteral("<br>"), 0, 0));
    charts::show_empty(chart, why);
    replace_chart(v, chart);
  }
  top_rows_model_->setDetail(nullptr);
  readout_->clear();
  if (!recording_ || !recording_->has_statistics) summary_->clear();
}

QString TableDetailView::coverageReadout(double row_share) const {
  if (!detail_ || detail_->rows == 0) return {};
  const uint64_t rows = rows_in_share(*detail_, row_share);
  return tr("The top %1 of rows (%2 rows) take %3 of lookups")
      .arg(format_share(row_share, row_share < 0.01 ? 2 : 1))
      .arg(format_count(rows))
      .arg(format_share(coverage_at(*detail_, row_share)));
}

bool TableDetailView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == coverage_view_->viewport() && event->type() == QEvent::MouseMove && detail_ && !detail_->coverage.empty()) {
    const auto* me = static_cast<QMouseEvent*>(event);
    QChart* chart = coverage_view_->chart();
    const QPointF scene = coverage_view_->mapToScene(me->position().toPoint());
    const QPointF value = chart->mapToValue(chart->mapFromScene(scene));
    const double share = value.x() / 100.0;  // the axis is in percent of rows
    if (chart->plotArea().contains(chart->mapFromScene(scene)) && share > 0) readout_->setText(coverageReadout(std::min(share, 1.0)));
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace edo::gui
