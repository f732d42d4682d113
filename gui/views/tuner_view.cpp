#include "tuner_view.h"

#include <QChartView>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <exception>
#include <limits>
#include <map>

#include "chart_util.h"
#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/tune/tune_runner.h"
#include "edo/tuner/device_profile.h"
#include "edo/tuner/plan_io.h"
#include "edo/model/profile_summary.h"
#include "edo/text/size.h"
#include "edo/tuner/summary.h"
#include "tuner_chart.h"

namespace edo::gui {

namespace {

QTableView* make_table_view(QAbstractItemModel* model, QWidget* parent) {
  auto* view = new QTableView(parent);
  view->setModel(model);
  view->setSortingEnabled(true);
  view->sortByColumn(0, Qt::AscendingOrder);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setResizeContentsPrecision(64);
  view->horizontalHeader()->setStretchLastSection(true);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  return view;
}

QString budget_text(uint64_t bytes) { return QString::fromStdString(model::format_bytes(bytes)).remove(QLatin1Char(' ')); }

}  // namespace

TunerView::TunerView(bool interactive, QWidget* parent) : QWidget(parent), interactive_(interactive) {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(makeForm());
  layout->addLayout(makeStatusRow());
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  layout->addWidget(summary_);
  layout->addWidget(makeResultPanes(), 1);
  runner_ = new TuneRunner(this);
  connect(run_, &QPushButton::clicked, this, &TunerView::runTune);
  connect(cancel_, &QPushButton::clicked, this, &TunerView::cancelTune);
  connect(replan_, &QPushButton::clicked, this, &TunerView::replan);
  connectRunner();
  setBusy(false);
  showResult(nullptr, {});
}

QWidget* TunerView::makeForm() {
  // The form: what `edo tune` asks for.
  auto* form_box = new QGroupBox(tr("Run edo tune on this machine"), this);
  auto* form = new QHBoxLayout(form_box);
  budget_ = new QLineEdit(form_box);
  budget_->setPlaceholderText(tr("e.g. 24GiB"));
  budget_->setToolTip(tr("Device memory for all tables (weights + optimizer state + metadata): 24GiB, 500MB, 4096"));
  budget_->setMaximumWidth(budget_->fontMetrics().horizontalAdvance(QStringLiteral("123.45GiB")) + 24);
  max_error_ = new QLineEdit(form_box);
  max_error_->setMaximumWidth(budget_->maximumWidth());
  // Empty means the tuner library's own default (TuneOptions), whatever it is: the view keeps
  // no second copy of it.
  const double default_error = tuner::TuneOptions{}.max_error;
  max_error_->setPlaceholderText(std::isfinite(default_error) ? QString::number(default_error) : tr("none"));
  max_error_->setToolTip(tr("Largest access-weighted relative L2 error a table may get, or 'none' (empty: %1)")
                             .arg(std::isfinite(default_error) ? QString::number(default_error) : tr("no limit")));
  backend_ = new QComboBox(form_box);
  backend_->addItems({QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")});
  // Empty: the tuner's own choice (measured here, or modelled for a GPU recording's stored GPU);
  // a stored device's name or a profile file models that GPU (docs/tuning.md "Device model").
  target_device_ = new QComboBox(form_box);
  target_device_->setEditable(true);
  // As narrow as a GPU's short name: the form row keeps the window's smallest width.
  target_device_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  target_device_->setMinimumContentsLength(6);
  target_device_->setMaximumWidth(target_device_->fontMetrics().horizontalAdvance(QStringLiteral("NVIDIA H200")) + 32);
  target_device_->addItem(QString());
  for (const auto& d : tuner::stored_devices()) target_device_->addItem(QString::fromStdString(d.name));
  target_device_->setToolTip(tr("Model the step times for this GPU instead of measuring them: a stored device or an "
                                "edo.device/1 file (empty: measured here, or modelled for the recording's own GPU when "
                                "edo has its profile)"));
  time_limit_ = new QDoubleSpinBox(form_box);
  time_limit_->setRange(0, 24 * 3600);
  time_limit_->setDecimals(0);
  time_limit_->setSuffix(tr(" s"));
  time_limit_->setSpecialValueText(tr("no limit"));
  time_limit_->setToolTip(tr("Seconds of measuring at most; the plan uses what was measured"));
  run_ = new QPushButton(tr("Run"), form_box);
  cancel_ = new QPushButton(tr("Cancel"), form_box);
  replan_ = new QPushButton(tr("Replan"), form_box);
  replan_->setToolTip(tr("A plan for this budget and error limit from the candidates already measured (no measuring)"));
  progress_ = new QProgressBar(form_box);
  progress_->setMinimumWidth(90);
  for (auto [label, widget] : {std::pair<QString, QWidget*>{tr("Budget"), budget_}, {tr("Max error"), max_error_},
                               {tr("Backend"), backend_}, {tr("Target"), target_device_}, {tr("Time limit"), time_limit_}}) {
    form->addWidget(new QLabel(label, form_box));
    form->addWidget(widget);
  }
  form->addWidget(run_);
  form->addWidget(cancel_);
  form->addWidget(replan_);
  form->addWidget(progress_, 1);
  form->addStretch();
  return form_box;
}

// The status line and the export buttons beside it.
QHBoxLayout* TunerView::makeStatusRow() {
  auto* status_row = new QHBoxLayout();
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_row->addWidget(status_, 1);
  for (auto [format, title] : {std::pair<const char*, QString>{"json", tr("Export JSON…")}, {"yaml", tr("Export YAML…")},
                               {"torchrec", tr("Export TorchRec…")}}) {
    auto* b = new QPushButton(title, this);
    const QString f = QString::fromLatin1(format);
    b->setProperty("format", f);
    connect(b, &QPushButton::clicked, this, [this, f] { exportWithDialog(f); });
    exports_ << b;
    status_row->addWidget(b);
  }
  return status_row;
}

// The Pareto chart and the plan side by side above the candidates (with their table filter).
QSplitter* TunerView::makeResultPanes() {
  auto* vertical = new QSplitter(Qt::Vertical, this);
  auto* top = new QSplitter(Qt::Horizontal, vertical);
  chart_view_ = charts::make_view(charts::make_chart(tr("Plans: device memory vs step time")), top);
  plan_ = new PlanModel(this);
  auto* plan_proxy = new QSortFilterProxyModel(this);
  plan_proxy->setSourceModel(plan_);
  plan_proxy->setSortRole(SortRole);
  auto* plan_host = new QWidget(top);
  auto* plan_layout = new QVBoxLayout(plan_host);
  plan_layout->setContentsMargins(0, 0, 0, 0);
  plan_layout->addWidget(new QLabel(tr("<b>The plan</b>"), plan_host));
  plan_view_ = make_table_view(plan_proxy, plan_host);
  // The reason is a sentence: it takes the room the numbers leave, elided, whole in its tooltip
  // (sized to its contents it pushed the table wider than the view and showed "bf1").
  plan_view_->horizontalHeader()->setSectionResizeMode(PlanModel::kWhy, QHeaderView::Stretch);
  plan_view_->horizontalHeader()->setMinimumSectionSize(plan_view_->fontMetrics().horizontalAdvance(QStringLiteral("Why…")) + 12);
  plan_layout->addWidget(plan_view_);
  top->addWidget(chart_view_);
  top->addWidget(plan_host);
  // The plan's columns need more room than the chart: 1:2 (at 1280 pixels the chart keeps
  // about 420 and the plan's reasons get a column that is not cut to a few letters).
  top->setStretchFactor(0, 1);
  top->setStretchFactor(1, 2);

  auto* bottom = new QWidget(vertical);
  auto* bottom_layout = new QVBoxLayout(bottom);
  bottom_layout->setContentsMargins(0, 0, 0, 0);
  auto* filter_row = new QHBoxLayout();
  filter_row->addWidget(new QLabel(tr("<b>Candidates</b> of"), bottom));
  table_filter_ = new QComboBox(bottom);
  table_filter_->setMinimumContentsLength(24);
  filter_row->addWidget(table_filter_);
  filter_row->addStretch();
  bottom_layout->addLayout(filter_row);
  candidates_ = new CandidatesModel(this);
  candidates_proxy_ = new QSortFilterProxyModel(this);
  candidates_proxy_->setSourceModel(candidates_);
  candidates_proxy_->setSortRole(SortRole);
  candidates_proxy_->setFilterKeyColumn(CandidatesModel::kTable);
  candidates_view_ = make_table_view(candidates_proxy_, bottom);
  bottom_layout->addWidget(candidates_view_);
  vertical->addWidget(top);
  vertical->addWidget(bottom);
  vertical->setStretchFactor(0, 3);
  vertical->setStretchFactor(1, 2);
  connect(table_filter_, &QComboBox::currentIndexChanged, this, [this](int index) {
    // Entry 0 is "all tables"; the others are exact names.
    candidates_proxy_->setFilterFixedString(QString());
    candidates_proxy_->setFilterRegularExpression(
        index <= 0 ? QString() : QLatin1Char('^') + QRegularExpression::escape(table_filter_->itemText(index)) + QLatin1Char('$'));
  });
  return vertical;
}

// The runner's progress, result and failure in the view.
void TunerView::connectRunner() {
  connect(runner_, &TuneRunner::progress, this, [this](qulonglong done, qulonglong total, double left, const QString& what) {
    progress_->setRange(0, static_cast<int>(std::min<qulonglong>(total, 1'000'000)));
    progress_->setValue(static_cast<int>(std::min(done, total)));
    say(tr("measuring %1 (%2 of %3 candidates%4)")
            .arg(what)
            .arg(done)
            .arg(total)
            .arg(left >= 0 ? tr(", about %1 left").arg(format_duration_ns(left * 1e9)) : QString()),
        false);
  });
  connect(runner_, &TuneRunner::finished, this, [this](TuneResultPtr result, const QString& not_saved) {
    setBusy(false);
    if (!recording_ || recording_->path != running_path_) {
      // Another recording was opened meanwhile: the run was stopped and is kept in its file.
      say(not_saved.isEmpty() ? tr("the tune of %1 stopped when another recording was opened; what it measured is saved there").arg(running_path_)
                              : not_saved,
          !not_saved.isEmpty());
      return;
    }
    showResult(std::move(result), not_saved);
  });
  connect(runner_, &TuneRunner::failed, this, [this](const QString& reason) {
    setBusy(false);
    if (recording_ && recording_->path != running_path_) return;  // about a file no longer open
    say(reason, true);
  });
}

void TunerView::setRecording(RecordingPtr recording) {
  const bool same_file = recording_ && recording && recording_->path == recording->path;
  recording_ = std::move(recording);
  if (same_file && result_) {  // keep a result made here while the statistics loaded
    refreshExports();
    return;
  }
  // A run on the file that was open stops (keeping what it measured, in that file); its
  // result is not shown over this recording.
  if (!same_file && runner_->busy() && (!recording_ || recording_->path != running_path_)) runner_->cancel();
  showResult(recording_ && recording_->tune ? std::make_shared<const model::TuneResult>(*recording_->tune) : nullptr, {});
}

void TunerView::refreshExports() { setBusy(runner_->busy()); }

bool TunerView::hasTorchRecFacts() const { return recording_ && recording_->torchrec_facts->get(); }

void TunerView::setBudget(const QString& text) { budget_->setText(text); }

void TunerView::setMaxError(const QString& text) { max_error_->setText(text); }

void TunerView::setBackend(const QString& backend) { backend_->setCurrentText(backend); }

tuner::TuneOptions TunerView::options() const {
  tuner::TuneOptions o;
  const QString budget = budget_->text().trimmed();
  if (budget.isEmpty()) throw std::invalid_argument("enter a budget: the device memory the tables may take, e.g. 24GiB");
  o.budget_bytes = edo::parse_size(budget.toStdString());
  const QString err = max_error_->text().trimmed();
  if (err.compare(QLatin1String("none"), Qt::CaseInsensitive) == 0) {
    o.max_error = std::numeric_limits<double>::infinity();
  } else if (!err.isEmpty()) {
    bool ok = false;
    o.max_error = err.toDouble(&ok);
    if (!ok || !(o.max_error >= 0)) throw std::invalid_argument("max error '" + err.toStdString() + "' is not a number >= 0 (e.g. 0.01) or 'none'");
  }
  o.backend = backend_->currentText().toStdString();
  o.target_device = target_device_->currentText().trimmed().toStdString();
  if (!o.target_device.empty()) (void)tuner::resolve_target_device(o.target_device);  // a bad one is said before running
  o.time_limit_s = time_limit_->value();
  return o;
}

bool TunerView::runTune() {
  if (!recording_) return false;
  tuner::TuneOptions o;
  try {
    o = options();
  } catch (const std::invalid_argument& e) {
    say(QString::fromStdString(e.what()), true);
    return false;
  }
  setBusy(true);
  progress_->setRange(0, 0);
  say(tr("starting: reading the recording…"), false);
  running_path_ = recording_->path;
  runner_->start(recording_->path, o);
  return true;
}

void TunerView::cancelTune() {
  if (!runner_->busy()) return;
  runner_->cancel();
  say(tr("stopping after the candidate being measured (the plan uses what was measured)…"), false);
}

bool TunerView::replan() {
  if (!result_) return false;
  tuner::TuneOptions o;
  try {
    o = options();
  } catch (const std::invalid_argument& e) {
    say(QString::fromStdString(e.what()), true);
    return false;
  }
  auto copy = std::make_shared<model::TuneResult>(*result_);
  tuner::replan(*copy, o.budget_bytes, o.max_error);
  showResult(copy, tr("replanned from the measured candidates (not saved in the file; Run saves a measured plan)"));
  return true;
}

void TunerView::setBusy(bool busy) {
  run_->setEnabled(!busy && recording_);
  cancel_->setEnabled(busy);
  replan_->setEnabled(!busy && result_);
  progress_->setVisible(busy);
  // TorchRec's export also waits for the recording's facts.
  const bool facts_in = hasTorchRecFacts();
  for (QPushButton* b : exports_)
    b->setEnabled(!busy && result_ && result_->feasible && (facts_in || b->property("format").toString() != QLatin1String("torchrec")));
}

void TunerView::say(const QString& message, bool error) {
  const QString text = dashboard_wording(message);  // the tuner's errors name flags too
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color: #b03000;") : QString());
  if (error && interactive_) QMessageBox::warning(this, tr("edo tune"), text);
}

void TunerView::showResult(TuneResultPtr result, const QString& note) {
  result_ = std::move(result);
  plan_->setResult(result_);
  candidates_->setResult(result_);
  {
    const QSignalBlocker block(table_filter_);
    table_filter_->clear();
    table_filter_->addItem(tr("all tables"));
    if (result_) {
      std::vector<std::string> names;
      for (const auto& c : result_->candidates)
        if (std::find(names.begin(), names.end(), c.table) == names.end()) names.push_back(c.table);
      for (const auto& n : names) table_filter_->addItem(QString::fromStdString(n));
    }
    candidates_proxy_->setFilterRegularExpression(QString());
  }
  QChart* old = chart_view_->chart();
  if (result_) {
    chart_view_->setChart(make_pareto_chart(*result_));
  } else {
    QChart* chart = charts::make_chart(tr("Plans: device memory vs step time"));
    charts::show_empty(chart, tr("this recording has not been tuned: enter a budget and Run"));
    chart_view_->setChart(chart);
  }
  delete old;

  if (!result_) {
    summary_->setText(recording_ ? tr("No tune run in %1 yet.").arg(recording_->path.toHtmlEscaped()) : QString());
    if (recording_ && budget_->text().isEmpty() && recording_->table_memory.total_bytes() > 0)
      budget_->setText(budget_text(recording_->table_memory.total_bytes() / 2));  // a start: half of today's
    say(note, false);
    setBusy(runner_->busy());
    Q_EMIT resultShown();
    return;
  }
  const model::TuneResult& r = *result_;
  budget_->setText(budget_text(r.budget_bytes));
  // A run without a limit says so when empty would mean the library's finite default.
  max_error_->setText(std::isfinite(r.max_error)                     ? QString::number(r.max_error)
                      : std::isfinite(tuner::TuneOptions{}.max_error) ? QStringLiteral("none")
                                                                      : QString());
  // The one summary text (edo/tuner/summary.h), as `edo tune` and `edo report` print it, in the
  // view's words (its fields, not the command's flags).
  QString html;
  for (const auto& line : tuner::summary_lines(r))
    html += (html.isEmpty() ? QString() : QStringLiteral("<br>")) + dashboard_wording(QString::fromStdString(line)).toHtmlEscaped();
  summary_->setText(html);
  say(note, !note.isEmpty() && note.startsWith(QLatin1String("the result was not saved")));
  setBusy(runner_->busy());
  Q_EMIT resultShown();
}

QString TunerView::exportPlan(const QString& format, const QString& path) const {
  if (!result_ || !result_->feasible) return tr("there is no plan to export");
  // TorchRec's file says what the recording knows: the loader computes those facts on its
  // worker after the statistics (recording.h), so no file is read here.
  const TorchRecFactsSlot::Facts* facts = recording_ ? recording_->torchrec_facts->get() : nullptr;
  if (const std::string* error = recording_ && !facts ? recording_->torchrec_facts->error() : nullptr;
      format == QLatin1String("torchrec") && error)
    return tr("%1: cannot compute the TorchRec facts (%2)").arg(recording_->path, QString::fromStdString(*error));
  if (format == QLatin1String("torchrec") && recording_ && !facts)
    return tr("the recording's TorchRec facts are still being computed (after its statistics): export TorchRec once they are in");
  static const TorchRecFactsSlot::Facts kNoFacts;
  std::string text;
  try {
    text = tuner::plan_document(*result_, format.toStdString(), facts ? *facts : kNoFacts);
  } catch (const std::invalid_argument&) {
    return tr("unknown export format '%1'").arg(format);
  }
  // The user's chosen file, written here on the UI thread: one document, the only file I/O of
  // an export (QSaveFile: a reader never sees half a plan).
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size()) ||
      !file.commit())
    return tr("%1: cannot write (%2)").arg(path, file.errorString());
  return {};
}

void TunerView::exportWithDialog(const QString& format) {
  const QString filter = format == QLatin1String("json")   ? tr("JSON (*.json)")
                         : format == QLatin1String("yaml") ? tr("YAML (*.yaml *.yml)")
                                                           : tr("Python (*.py)");
  const QString suggested = QStringLiteral("plan.") + (format == QLatin1String("torchrec") ? QStringLiteral("py") : format);
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the plan"), suggested, filter);
  if (path.isEmpty()) return;
  const QString error = exportPlan(format, path);
  if (error.isEmpty()) say(tr("wrote %1").arg(path), false);
  else say(error, true);
}

}  // namespace edo::gui
