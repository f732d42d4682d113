#include "edo/gui/tune/tune_models.h"

#include <QColor>
#include <QFont>

#include <cmath>
#include <utility>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/tune/tune_words.h"
#include "edo/tuner/summary.h"

namespace edo::gui {

namespace {

const model::TuneCandidate* candidate_of(const model::TuneResult& r, const model::TuneChoice& ch) {
  if (ch.candidate < 0 || static_cast<size_t>(ch.candidate) >= r.candidates.size()) return nullptr;
  return &r.candidates[static_cast<size_t>(ch.candidate)];
}

QString step_time(double us) { return std::isfinite(us) ? format_duration_ns(us * 1e3) : QStringLiteral("–"); }
QString error_text(double e) { return std::isfinite(e) ? QString::number(e, 'g', 3) : QStringLiteral("–"); }
// A candidate's error: "not validated" when its loss was not measured on held-out lookups.
QString candidate_error(const model::TuneCandidate& c) { return c.validated ? error_text(c.error) : QObject::tr("not validated"); }
double sortable(double v) { return std::isfinite(v) ? v : -1.0; }

// An offload's policy headroom (docs/tuning.md "Cache policies"): Belady's optimal replacement
// minus FBGEMM's cache under the algorithm the plan picks, held-out hit rates in points, with
// every policy's rate in the tooltip. "–" for other strategies and caches without replays.
struct PolicyHeadroomCell {
  QString text = QStringLiteral("–");
  double sort = -1.0;
  QString tip;
};
PolicyHeadroomCell policy_headroom_cell(const model::TuneCandidate& c) {
  PolicyHeadroomCell out;
  if (c.strategy != "offload") return out;
  const model::StrategyParams& p = c.params;
  if (!p.policy_headroom || !p.cache_policy) {
    out.tip = QObject::tr("no policy replay (edo's own static hot set, or no ordered sample in the recording)");
    return out;
  }
  out.text = QObject::tr("%1 pts (%2)").arg(100.0 * *p.policy_headroom, 0, 'f', 1).arg(QString::fromStdString(*p.cache_policy).toUpper());
  out.sort = *p.policy_headroom;
  const model::PolicyReplays r = p.policy_replays.value_or(model::PolicyReplays{});
  auto rate = [](const std::optional<double>& v) { return format_share(v.value_or(0.0)); };
  out.tip = QObject::tr("held out, at FBGEMM's %1 slots: optimal %2; FBGEMM LRU %3, LFU %4, LRU with prefetch %5; "
                        "fully associative LRU %6, LFU %7")
                .arg(static_cast<qulonglong>(r.slots.value_or(0)))
                .arg(rate(r.optimal), rate(r.fbgemm_lru), rate(r.fbgemm_lfu), rate(r.fbgemm_lru_prefetch), rate(r.lru), rate(r.lfu));
  return out;
}

}  // namespace

QString choice_strategy(const model::TuneResult& r, const model::TuneChoice& ch) {
  if (!ch.shares_with.empty()) return QObject::tr("shared (with %1)").arg(QString::fromStdString(ch.shares_with));
  const model::TuneCandidate* c = candidate_of(r, ch);
  return c ? QString::fromStdString(c->strategy) : QObject::tr("unchanged");
}

PlanModel::PlanModel(QObject* parent)
    : TableModelBase({{tr("Table"), {}, false},
                      {tr("Strategy"), tr("The strategy the plan chose for the table"), false},
                      {tr("Tier"), tr("Where the table lives: device, host (offloaded behind a device cache) or ssd (on the SSD behind a device and a host cache)"), false},
                      {tr("Recorded"), tr("Device memory as recorded: weights + optimizer state"), true},
                      {tr("Planned"), tr("Device memory under the plan (weights + optimizer state + metadata)"), true},
                      {tr("SSD"), tr("SSD space under the plan (the ssd tier: the whole table)"), true},
                      {tr("Saved"), tr("Recorded minus planned"), true},
                      {tr("Step time"), tr("The table's time per step with the chosen strategy: forward, backward and update for a training table, the forward for an inference one (the Why says what was measured and what modelled)"), true},
                      {tr("Error"), tr("Access-weighted relative L2 error of the strategy's rows"), true},
                      {tr("Headroom"), tr("Offload: policy headroom, Belady's optimal replacement minus FBGEMM's cache under the chosen algorithm (held-out hit rates)"), true},
                      {tr("Why"), {}, false}},
                     parent) {}

void PlanModel::setResult(TuneResultPtr result) {
  beginResetModel();
  result_ = std::move(result);
  endResetModel();
}

int PlanModel::rows() const { return result_ ? static_cast<int>(result_->choices.size()) : 0; }

QVariant PlanModel::cell(int row, int column, int role) const {
  const model::TuneChoice& ch = result_->choices[static_cast<size_t>(row)];
  const model::TuneCandidate* c = candidate_of(*result_, ch);
  const model::TuneTable* t = result_->table_named(ch.table);
  const uint64_t recorded = t ? t->device_bytes : 0;
  const double saved = static_cast<double>(recorded) - static_cast<double>(ch.device_bytes);
  if (role == TableNameRole) return QString::fromStdString(ch.table);
  if (role == Qt::ToolTipRole) {
    if (column == kWhy || column == kTable) return column == kWhy ? dashboard_text(ch.why, ch.why_reasons) : QString::fromStdString(ch.table);
    if (column == kStrategy && c) return QString::fromStdString(c->spec);
    if (column == kHeadroom && c) return policy_headroom_cell(*c).tip;
  }
  switch (column) {
    case kTable: return answer(role, QString::fromStdString(ch.table), QString::fromStdString(ch.table));
    case kStrategy: {
      // Shown with the optimizer lever (its bytes are in Planned); sorted and compared by the
      // strategy alone, as `edo tune --json` names it.
      QString shown = choice_strategy(*result_, ch);
      if (c && ch.shares_with.empty()) shown = QString::fromStdString(tuner::strategy_label(*result_, *c));
      return answer(role, shown, choice_strategy(*result_, ch));
    }
    case kTier: {
      const QString tier = QString::fromUtf8(c ? model::tier_of(*c).data() : "device");  // tied: the owner's tier
      return answer(role, tier, tier);
    }
    case kRecorded: return answer(role, format_bytes(recorded), qulonglong(recorded));
    case kPlanned: return answer(role, format_bytes(ch.device_bytes), qulonglong(ch.device_bytes));
    case kSsd: return answer(role, format_bytes(ch.ssd_bytes), qulonglong(ch.ssd_bytes));
    case kSaved:
      return answer(role, saved >= 0 ? format_bytes(static_cast<uint64_t>(saved)) : QStringLiteral("-") + format_bytes(static_cast<uint64_t>(-saved)),
                    saved);
    case kStepTime: return answer(role, c ? step_time(ch.step_us) : QStringLiteral("–"), c ? sortable(ch.step_us) : -1.0);
    case kError: return answer(role, c ? candidate_error(*c) : QStringLiteral("0"), c ? sortable(c->error) : 0.0);
    case kHeadroom: {
      const PolicyHeadroomCell h = c && ch.shares_with.empty() ? policy_headroom_cell(*c) : PolicyHeadroomCell{};
      return answer(role, h.text, h.sort);
    }
    case kWhy: return answer(role, dashboard_text(ch.why, ch.why_reasons), QString::fromStdString(ch.why));
  }
  return {};
}

CandidatesModel::CandidatesModel(QObject* parent)
    : TableModelBase({{tr("Table"), tr("The table (or the owner of tables sharing weights)"), false},
                      {tr("Strategy"), {}, false},
                      {tr("Tier"), tr("Where the table lives: device, host (offload) or ssd"), false},
                      {tr("Device"), tr("Device memory: weights + optimizer state + metadata (exact)"), true},
                      {tr("Host"), tr("Host memory the format needs (offload; ssd: the host cache)"), true},
                      {tr("SSD"), tr("SSD space the format needs (ssd: the whole table)"), true},
                      {tr("Step time"), tr("Lookup time per step, measured with the recorded access pattern"), true},
                      {tr("Error"), tr("Access-weighted relative L2 error"), true},
                      {tr("Hit rate"), tr("Offload: cache hit rate measured (and the recording's curve at that size)"), true},
                      {tr("Headroom"), tr("Offload: policy headroom, Belady's optimal replacement minus FBGEMM's cache under the chosen algorithm (held-out hit rates)"), true},
                      {tr("Retrain"), tr("Whether the strategy needs retraining (hashing, pruning, ...)"), false},
                      {tr("Plan"), tr("✓ when the plan chose it"), false},
                      {tr("Note"), tr("How it was measured, or why it was not"), false}},
                     parent) {}

void CandidatesModel::setResult(TuneResultPtr result) {
  beginResetModel();
  result_ = std::move(result);
  chosen_.assign(result_ ? result_->candidates.size() : 0, false);
  if (result_)
    for (const auto& ch : result_->choices)
      if (ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < chosen_.size() && ch.shares_with.empty()) chosen_[static_cast<size_t>(ch.candidate)] = true;
  endResetModel();
}

int CandidatesModel::rows() const { return result_ ? static_cast<int>(result_->candidates.size()) : 0; }

QVariant CandidatesModel::cell(int row, int column, int role) const {
  const model::TuneCandidate& c = result_->candidates[static_cast<size_t>(row)];
  const bool in_plan = chosen_[static_cast<size_t>(row)];
  if (role == TableNameRole) return QString::fromStdString(c.table);
  if (role == Qt::FontRole && in_plan) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ForegroundRole && !c.plannable(result_->allow_unvalidated)) return QColor(Qt::gray);
  if (role == Qt::ToolTipRole) {
    if (column == kStrategy) return QString::fromStdString(c.spec);
    if (column == kNote || column == kTable) return column == kNote ? dashboard_text(c.note, c.note_reasons) : QString::fromStdString(c.table);
    // Where the hit rate comes from (docs/tuning.md "Held-out validation"), and the figure in
    // parentheses: the whole recording's.
    if (column == kHitRate && c.hit_rate)
      return c.heldout_hit_rate ? tr("held out: fitted on the first 70% of the lookups, replayed on the rest; "
                                     "in parentheses, the whole recording's")
                                : tr("estimated: the recording cannot replay this cache; in parentheses, the whole recording's");
    if (column == kHeadroom) return policy_headroom_cell(c).tip;
  }
  QString hit = QStringLiteral("–");
  if (c.hit_rate) {
    hit = format_share(*c.hit_rate);
    if (c.recorded_hit_rate) hit += QStringLiteral(" (%1)").arg(format_share(*c.recorded_hit_rate));
  }
  const QString strategy = QString::fromStdString(tuner::strategy_label(*result_, c));
  switch (column) {
    case kTable: return answer(role, QString::fromStdString(c.table), QString::fromStdString(c.table));
    case kStrategy: return answer(role, strategy, strategy);
    case kTier: {
      const QString tier = QString::fromUtf8(model::tier_of(c).data());
      return answer(role, tier, tier);
    }
    case kDevice: return answer(role, format_bytes(c.device_bytes), qulonglong(c.device_bytes));
    case kHost: return answer(role, format_bytes(c.host_bytes), qulonglong(c.host_bytes));
    case kSsd: return answer(role, format_bytes(c.ssd_bytes), qulonglong(c.ssd_bytes));
    case kStepTime: return answer(role, c.measured ? step_time(c.step_us) : QStringLiteral("–"), c.measured ? sortable(c.step_us) : -1.0);
    case kError: return answer(role, candidate_error(c), sortable(c.error));
    case kHitRate: return answer(role, hit, c.hit_rate ? *c.hit_rate : -1.0);
    case kHeadroom: {
      const PolicyHeadroomCell h = policy_headroom_cell(c);
      return answer(role, h.text, h.sort);
    }
    case kRetraining: return answer(role, c.needs_retraining ? tr("yes") : tr("no"), c.needs_retraining ? 1 : 0);
    case kInPlan: return answer(role, in_plan ? QStringLiteral("✓") : QString(), in_plan ? 1 : 0);
    case kNote: return answer(role, dashboard_text(c.note, c.note_reasons), QString::fromStdString(c.note));
  }
  return {};
}

}  // namespace edo::gui
