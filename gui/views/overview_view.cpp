#include "overview_view.h"

#include <QChartView>
#include <QComboBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "chart_util.h"
#include "edo/db/recording_state.h"
#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/job/sessions_model.h"
#include "edo/gui/tables/top_tables_model.h"
#include "edo/model/drops.h"
#include "memory_chart.h"
#include "share_bar_delegate.h"

namespace edo::gui {

namespace {

enum Card { kPeak, kTableBytes, kTables, kLookups, kSteps, kCardCount };

QTableView* make_top_table(TopTablesModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setModel(model);
  view->setItemDelegateForColumn(TopTablesModel::kShare, new ShareBarDelegate(view));
  view->verticalHeader()->hide();
  view->horizontalHeader()->setSectionResizeMode(TopTablesModel::kName, QHeaderView::Stretch);
  view->horizontalHeader()->setSectionResizeMode(TopTablesModel::kValue, QHeaderView::ResizeToContents);
  view->horizontalHeader()->setSectionResizeMode(TopTablesModel::kShare, QHeaderView::Fixed);
  view->horizontalHeader()->resizeSection(TopTablesModel::kShare, 90);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
  return view;
}

}  // namespace

OverviewView::OverviewView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(this);
  header_->setTextFormat(Qt::RichText);
  header_->setWordWrap(true);
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(header_);

  sessions_model_ = new SessionsModel(this);
  sessions_ = new QTableView(this);
  sessions_->setModel(sessions_model_);
  sessions_->verticalHeader()->hide();
  // Every column as wide as its text (roles and exits are words), the command takes the rest.
  sessions_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  sessions_->horizontalHeader()->setSectionResizeMode(SessionsModel::kCommand, QHeaderView::Stretch);
  sessions_->setWordWrap(false);
  sessions_->verticalHeader()->setDefaultSectionSize(sessions_->fontMetrics().height() + 6);
  sessions_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  sessions_->hide();
  layout->addWidget(sessions_);

  dropped_ = new QLabel(this);
  dropped_->setWordWrap(true);
  dropped_->setTextFormat(Qt::RichText);
  dropped_->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; border: 1px solid #e0b000; padding: 6px; }"));
  dropped_->hide();
  layout->addWidget(dropped_);

  auto* cards = new QGridLayout();
  cards->setHorizontalSpacing(24);
  const QString captions[kCardCount] = {tr("peak memory"), tr("table memory"), tr("tables"),
                                        tr("lookups"), tr("steps")};
  for (int i = 0; i < kCardCount; ++i) {
    auto* value = new QLabel(QStringLiteral("…"), this);
    QFont f = value->font();
    f.setPointSizeF(f.pointSizeF() * 1.6);
    f.setBold(true);
    value->setFont(f);
    auto* caption = new QLabel(captions[i], this);
    caption->setStyleSheet(QStringLiteral("color: #555;"));
    cards->addWidget(value, 0, i);
    caption->setWordWrap(true);
    caption->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    cards->addWidget(caption, 1, i);
    cards->setColumnStretch(i, i == kTableBytes ? 2 : 1);
    card_values_.append(value);
    card_captions_.append(caption);
  }
  layout->addLayout(cards);

  auto* picker_row = new QHBoxLayout();
  session_picker_ = new QComboBox(this);
  session_picker_->hide();
  picker_row->addStretch();
  picker_row->addWidget(session_picker_);
  layout->addLayout(picker_row);
  connect(session_picker_, &QComboBox::currentIndexChanged, this, &OverviewView::showTimeline);

  chart_view_ = charts::make_view(charts::make_chart(tr("Memory")), this);
  chart_view_->setMinimumHeight(260);
  layout->addWidget(chart_view_, 3);

  auto* tops = new QHBoxLayout();
  by_bytes_ = new TopTablesModel(TopTablesModel::Measure::kBytes, 10, this);
  by_lookups_ = new TopTablesModel(TopTablesModel::Measure::kLookups, 10, this);
  for (auto [model, title] : {std::pair{by_bytes_, tr("Biggest tables by bytes")}, std::pair{by_lookups_, tr("Most-read tables by lookups")}}) {
    auto* box = new QGroupBox(title, this);
    auto* box_layout = new QVBoxLayout(box);
    box_layout->setContentsMargins(4, 4, 4, 4);
    QTableView* view = make_top_table(model, box);
    connect(view, &QTableView::doubleClicked, this,
            [this](const QModelIndex& index) { Q_EMIT openTable(index.data(TableNameRole).toString()); });
    box_layout->addWidget(view);
    tops->addWidget(box);
  }
  layout->addLayout(tops, 2);
}

void OverviewView::setRecording(RecordingPtr recording) {
  recording_ = std::move(recording);
  sessions_model_->setRecording(recording_);
  by_bytes_->setRecording(recording_);
  by_lookups_->setRecording(recording_);
  updateHeader();

  // The memory chart depends on the outline only: draw it once per file, not again when the
  // statistics arrive (they do not change it).
  const QString charted = recording_ ? QStringLiteral("%1|%2|%3").arg(recording_->path).arg(recording_->timelines.size()).arg(recording_->tables.size())
                                     : QString();
  if (charted == charted_ && recording_ && !recording_->timelines.empty()) return;
  charted_ = charted;
  const QSignalBlocker block(session_picker_);
  session_picker_->clear();
  if (!recording_) return;
  int peak_index = 0;
  for (size_t i = 0; i < recording_->timelines.size(); ++i) {
    const StackedTimeline& tl = recording_->timelines[i];
    const model::Session* s = recording_->session(tl.session_id);
    session_picker_->addItem(tr("process %1 (pid %2): peak %3")
                                 .arg(tl.session_id)
                                 .arg(s ? s->pid : 0)
                                 .arg(format_bytes(static_cast<uint64_t>(tl.peak_bytes))));
    if (tl.peak_bytes > recording_->timelines[static_cast<size_t>(peak_index)].peak_bytes) peak_index = static_cast<int>(i);
  }
  session_picker_->setVisible(recording_->timelines.size() > 1);
  session_picker_->setCurrentIndex(peak_index);
  // The chart in an event of its own: the numbers above it paint first, and no single step
  // of the UI thread takes long (bench/gui).
  const int generation = ++chart_generation_;
  const int index = recording_->timelines.empty() ? -1 : peak_index;
  QTimer::singleShot(0, this, [this, generation, index] {
    if (generation == chart_generation_) showTimeline(index);
  });
}

void OverviewView::showTimeline(int index) {
  QChart* old = chart_view_->chart();
  QChart* chart;
  if (index >= 0 && static_cast<size_t>(index) < recording_->timelines.size()) {
    const StackedTimeline& tl = recording_->timelines[static_cast<size_t>(index)];
    const model::Session* s = recording_->session(tl.session_id);
    QString label = s && recording_->profile.sessions.size() > 1 ? tr("process %1 (pid %2)").arg(tl.session_id).arg(s->pid)
                                                                   : tr("%1 allocation events").arg(format_count(tl.events));
    chart = make_timeline_chart(tl, label);
  } else {
    chart = make_table_bytes_chart(*recording_);
  }
  chart_view_->setChart(chart);
  delete old;
  Q_EMIT memoryChartShown();
}

void OverviewView::updateHeader() {
  if (!recording_) {
    header_->clear();
    return;
  }
  const model::Profile& p = recording_->profile;
  // A recording still being written, or cut short, says so (issue 30 §10), with the time it holds.
  const db::RecordingState rec = db::recording_state(p);
  QString html = QStringLiteral("<b>%1</b>").arg(recording_->path.toHtmlEscaped());
  if (p.sessions.size() == 1) {
    const model::Session& s = p.sessions.front();
    html += QStringLiteral("<br><tt>%1</tt><br>").arg(QString::fromStdString(s.command).toHtmlEscaped());
    QStringList facts;
    facts << tr("pid %1 on %2").arg(s.pid).arg(s.host.empty() ? tr("unknown host") : QString::fromStdString(s.host).toHtmlEscaped());
    facts << (s.gpus.empty() ? tr("no GPU") : QString::fromStdString(s.gpus).toHtmlEscaped());
    facts << format_duration_ns(static_cast<double>(std::max(s.duration_ns, rec.whole() ? 0 : rec.saved_duration_ns())));
    facts << (rec.whole() ? describe_exit(s) : QString::fromStdString(rec.word()));
    facts << tr("%1 steps").arg(format_count(s.steps));
    // Which edo command wrote it ("record", "synth", "import"): a synthetic profile says so.
    if (!s.source.empty()) facts << tr("written by edo %1").arg(QString::fromStdString(s.source).toHtmlEscaped());
    html += facts.join(QStringLiteral(" · "));
  } else {
    // What the processes are, counted as `edo report` counts them (no "ranks" without ranks).
    html += QStringLiteral("<br>") + tr("%1 traced processes (%2)").arg(p.sessions.size()).arg(describe_roles(model::job_view(p)).toHtmlEscaped());
  }
  if (!rec.whole()) html += QStringLiteral("<br><b>⚠ %1</b>").arg(QString::fromStdString(rec.describe()).toHtmlEscaped());
  header_->setText(html);
  sessions_->setVisible(p.sessions.size() > 1);
  // Tall enough for up to 4 processes without scrolling, never more.
  const int shown_rows = static_cast<int>(std::min<size_t>(p.sessions.size(), 4));
  sessions_->setFixedHeight(sessions_->horizontalHeader()->sizeHint().height() +
                            shown_rows * sessions_->verticalHeader()->defaultSectionSize() + 2 * sessions_->frameWidth());

  // Every loss counter, as `edo report` lists them (edo/model/drops.h says what each lost and
  // which setting avoids it); a process that ended without its final flush counts too.
  const uint64_t dropped = p.dropped_events();
  QString losses;
  for (const auto& [name, n] : p.drops())
    if (n) losses += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(model::describe_drop(name, n)).toHtmlEscaped());
  dropped_->setVisible(!losses.isEmpty() || dropped > 0);
  dropped_->setText(
      (dropped ? tr("⚠ The tracer dropped %1 events while recording: counts and memory are lower bounds.").arg(format_count(dropped))
               : tr("⚠ The tracer lost data while recording: counts and memory are lower bounds.")) +
      (losses.isEmpty() ? tr(" Record again with a larger EDO_MAX_BUFFER_MB / EDO_MAX_EVENTS.")  // a file without counters by name
                        : QStringLiteral("<ul style=\"margin: 0\">%1</ul>").arg(losses)));

  const int64_t peak = recording_->peak_bytes;
  card_values_[kPeak]->setText(format_bytes(static_cast<uint64_t>(std::max<int64_t>(peak, 0))));
  card_captions_[kPeak]->setText(p.memory_events.empty() ? tr("peak memory (no device timeline: the tables' sum)") : tr("peak device memory"));
  card_values_[kPeak]->setToolTip(p.memory_events.empty() ? tr("No device timeline: the sum of the tables' bytes")
                                                          : tr("Highest live device memory of one process"));
  const model::TableMemory memory = recording_->table_memory;
  card_values_[kTableBytes]->setText(format_bytes(memory.total_bytes()));
  card_values_[kTableBytes]->setToolTip(tr("weights %1 + optimizer state %2 + gradients %3")
                                            .arg(format_bytes(memory.weight_bytes), format_bytes(memory.optimizer_bytes),
                                                 format_bytes(memory.grad_bytes)));
  card_captions_[kTableBytes]->setText(memory.optimizer_bytes || memory.grad_bytes
                                           ? tr("table memory = weights %1 + optimizer state %2 + gradients %3")
                                                 .arg(format_bytes(memory.weight_bytes), format_bytes(memory.optimizer_bytes),
                                                      format_bytes(memory.grad_bytes))
                                           : tr("table memory (weights)"));
  card_values_[kTables]->setText(format_count(recording_->tables.size()));
  card_values_[kLookups]->setText(format_count(recording_->total_lookups()));
  uint64_t steps = 0;
  for (const auto& s : p.sessions) steps += s.steps;
  card_values_[kSteps]->setText(format_count(steps));
}

}  // namespace edo::gui
