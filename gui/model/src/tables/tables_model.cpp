#include "edo/gui/tables/tables_model.h"

#include <QColor>

#include "edo/gui/format.h"
#include "edo/gui/tables/llm_text.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/tables/table_fields.h"

namespace edo::gui {

TablesModel::TablesModel(QObject* parent)
    : TableModelBase(
          {{tr("Table"), tr("Module name (PyTorch) or the name given to edo_table_register()"), false},
           {tr("Rows × dim"), {}, true},
           {tr("Dtype"), {}, false},
           {tr("Device"), {}, false},
           {tr("Bytes"), tr("Weights + optimizer state + gradients; tied tables count shared weights once"), true},
           {tr("Weights"), tr("rows × dim × element size ('shared': the weights of the tied table named first)"), true},
           {tr("Optimizer"), tr("Optimizer state: Adam moments, Adagrad sums, ..."), true},
           {tr("Grads"), tr("Gradients of the weights"), true},
           {tr("Lookups"), tr("Row reads recorded"), true},
           {tr("Unique rows"), tr("Rows read at least once (~: HyperLogLog estimate)"), true},
           {tr("Top 0.1%"), tr("Share of lookups that go to the top 0.1% of the table's rows (at least one row)"), true},
           {tr("Top 1%"), tr("Share of lookups that go to the top 1% of the table's rows"), true},
           {tr("Top 10%"), tr("Share of lookups that go to the top 10% of the table's rows"), true},
           {tr("Zipf α"), tr("Maximum-likelihood Zipf exponent of the rank-frequency curve"), true},
           {tr("LRU 1%"), tr("Hit rate of an LRU cache holding 1% of the rows (at least one)"), true},
           {tr("LRU 10%"), tr("Hit rate of an LRU cache holding 10% of the rows"), true},
           {tr("LRU 50%"), tr("Hit rate of an LRU cache holding 50% of the rows"), true},
           {tr("Tied with"), tr("Other names on the same weights"), false},
           {tr("Activation"), tr("Output of the table's lookups plus its gradient, in the step with the most (PyTorch)"), true},
           {tr("LM head"), tr("The token table's output head: tied (its own weights) or untied (with its bytes)"), false}},
          parent) {}

void TablesModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  recording_ = std::move(recording);
  endResetModel();
}

const model::TableView* TablesModel::table(int row) const {
  if (!recording_ || row < 0 || row >= rows()) return nullptr;
  return &recording_->tables[static_cast<size_t>(row)];
}

bool TablesModel::hasMemoryParts() const {
  if (!recording_) return false;
  for (const auto& t : recording_->tables)
    if (optimizer_bytes(t) || grad_bytes(t)) return true;
  return false;
}

bool TablesModel::countedWithOwner(const model::TableView& t) { return shares_weights(t) && lookups(t) == 0; }

int TablesModel::rows() const { return recording_ ? static_cast<int>(recording_->tables.size()) : 0; }

QVariant TablesModel::cell(int row, int column, int role) const {
  const model::TableView& t = recording_->tables[static_cast<size_t>(row)];
  const stats::TableSummary& s = t.summary;
  const bool ready = recording_->has_statistics;
  const QString pending = QStringLiteral("…");
  const bool tied = countedWithOwner(t);
  if (role == TableNameRole) return QString::fromStdString(t.name);
  if (role == Qt::ToolTipRole) {
    if (column == kName) return QString::fromStdString(t.name);
    if ((column == kBytes || column == kWeights) && shares_weights(t))
      return tr("Weights shared with %1 (counted there)").arg(QString::fromStdString(t.shares_weights_of));
    if (column == kZipf && ready && s.zipf.valid) return tr("fit error (RMS of log10 frequency): %1").arg(s.zipf.fit_error, 0, 'f', 3);
    if (tied && column >= kLookups && column <= kLru50)
      return tr("Shares the weights of %1; its lookups, if any, are counted there").arg(QString::fromStdString(t.shares_weights_of));
    if (column == kActivation) return activationDetail(recording_->profile, t);
    if (column == kLmHead) return lmHeadDetail(recording_->profile, t);
    if (!ready && column >= kUnique && column <= kLru50) return tr("statistics are still loading");
    return {};
  }
  if (role == Qt::ForegroundRole && !ready && column >= kUnique && column <= kLru50) return QColor(Qt::gray);
  // The sort keys stay the numbers (0 lookups), so a tied table sorts with the unread ones.
  auto stat = [&](const QString& text, const QVariant& sort) {
    if (tied && ready) return answer(role, QStringLiteral("–"), sort);
    return answer(role, ready ? text : pending, ready ? sort : QVariant(-1.0));
  };
  switch (column) {
    case kName: return answer(role, QString::fromStdString(t.name), QString::fromStdString(t.name));
    case kShape:
      return answer(role, QStringLiteral("%1 × %2").arg(format_count(t.rows)).arg(t.dim),
                    static_cast<double>(t.rows) * t.dim);
    case kDtype: return answer(role, QString::fromStdString(t.dtype), QString::fromStdString(t.dtype));
    case kDevice: return answer(role, QString::fromStdString(t.device), QString::fromStdString(t.device));
    case kBytes: {
      QString text = format_bytes(total_bytes(t));
      if (shares_weights(t)) text = total_bytes(t) ? QStringLiteral("+") + format_bytes(total_bytes(t)) : tr("shared");
      return answer(role, text, qulonglong(total_bytes(t)));
    }
    case kWeights:
      return answer(role, shares_weights(t) ? tr("shared") : format_bytes(weight_bytes(t)), qulonglong(weight_bytes(t)));
    case kOptimizer: return answer(role, format_bytes(optimizer_bytes(t)), qulonglong(optimizer_bytes(t)));
    case kGrads: return answer(role, format_bytes(grad_bytes(t)), qulonglong(grad_bytes(t)));
    case kLookups: return answer(role, tied ? tr("(tied)") : format_count(lookups(t)), qulonglong(lookups(t)));
    case kUnique:
      return stat(format_count(s.unique_rows) + (is_sketched(t) ? QStringLiteral("~") : QString()), qulonglong(s.unique_rows));
    case kTop01: return stat(format_share(s.coverage_top_0_1pct), s.coverage_top_0_1pct);
    case kTop1: return stat(format_share(s.coverage_top_1pct), s.coverage_top_1pct);
    case kTop10: return stat(format_share(s.coverage_top_10pct), s.coverage_top_10pct);
    case kZipf:
      return stat(s.zipf.valid ? QString::number(s.zipf.alpha, 'f', 2) : QStringLiteral("–"), s.zipf.valid ? s.zipf.alpha : -1.0);
    case kLru1: return stat(format_share(s.lru_hit_rate_1pct), s.lru_hit_rate_1pct);
    case kLru10: return stat(format_share(s.lru_hit_rate_10pct), s.lru_hit_rate_10pct);
    case kLru50: return stat(format_share(s.lru_hit_rate_50pct), s.lru_hit_rate_50pct);
    case kActivation: {
      const QString text = activationText(recording_->profile, t);
      return answer(role, text.isEmpty() ? QStringLiteral("–") : text, qulonglong(activationPeakBytes(recording_->profile, t)));
    }
    case kLmHead: {
      const QString text = lmHeadText(recording_->profile, t);
      return answer(role, text, qulonglong(lmHeadBytes(recording_->profile, t)));
    }
    case kTies: {
      QStringList names;
      for (const auto& n : t.tied_with) names << QString::fromStdString(n);
      return answer(role, names.join(QStringLiteral(", ")), names.join(QStringLiteral(", ")));
    }
  }
  return {};
}

}  // namespace edo::gui
