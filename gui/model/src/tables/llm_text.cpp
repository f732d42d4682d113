#include "edo/gui/tables/llm_text.h"

#include <QStringList>

#include "edo/gui/format.h"
#include "edo/tuner/llm_facts.h"
#include "edo/tuner/vocab_coverage.h"

namespace edo::gui {
namespace {

QString llmShape(const std::vector<uint64_t>& shape) {
  QStringList parts;
  for (uint64_t n : shape) parts << QString::number(n);
  return parts.join(QStringLiteral(" × "));
}

}  // namespace

uint64_t activationPeakBytes(const model::Profile& profile, const model::TableView& t) {
  const auto a = tuner::activation_of(profile, t.table_name);
  return a ? a->peak_bytes : 0;
}

QString activationText(const model::Profile& profile, const model::TableView& t) {
  const auto a = tuner::activation_of(profile, t.table_name);
  return a ? format_bytes(a->peak_bytes) : QString();
}

QString activationDetail(const model::Profile& profile, const model::TableView& t) {
  const auto a = tuner::activation_of(profile, t.table_name);
  if (!a) return {};
  return QObject::tr("%1 output + %2 gradient, %3 %4, %n call(s) per step", nullptr, static_cast<int>(a->calls))
      .arg(format_bytes(a->output_bytes), format_bytes(a->grad_bytes), llmShape(a->shape), QString::fromStdString(a->dtype));
}

uint64_t lmHeadBytes(const model::Profile& profile, const model::TableView& t) {
  const auto h = tuner::lm_head_of(profile, t.table_name);
  return h ? h->total_bytes() : 0;
}

QString lmHeadText(const model::Profile& profile, const model::TableView& t) {
  if (const auto h = tuner::lm_head_of(profile, t.table_name)) {
    const QString name = QString::fromStdString(h->name);
    return h->tied ? QObject::tr("%1 (tied)").arg(name) : QObject::tr("%1 (untied, %2)").arg(name, format_bytes(h->total_bytes()));
  }
  if (!t.shares_weights_of.empty()) {
    const auto owner = tuner::lm_head_of(profile, t.shares_weights_of);
    if (owner && owner->tied && owner->name == t.table_name)
      return QObject::tr("head of %1 (tied)").arg(QString::fromStdString(t.shares_weights_of));
  }
  return {};
}

QString lmHeadDetail(const model::Profile& profile, const model::TableView& t) {
  const auto h = tuner::lm_head_of(profile, t.table_name);
  if (!h) return {};
  const QString reads = QObject::tr("reads every row %n time(s) per step (%1)", nullptr, static_cast<int>(h->dense_reads_per_step))
                            .arg(format_bytes(h->dense_read_bytes_per_step));
  if (h->tied)
    return QObject::tr("LM head %1, tied: the table's own weights, gradient and optimizer state; %2").arg(QString::fromStdString(h->name), reads);
  return QObject::tr("LM head %1, untied: weights %2, gradient %3, optimizer state %4; %5")
      .arg(QString::fromStdString(h->name), format_bytes(h->weight_bytes), format_bytes(h->grad_bytes), format_bytes(h->optimizer_bytes), reads);
}

QString vocabCoverageText(const model::Profile& profile, const model::TableView& t) {
  if (!tuner::is_token_table(profile, t.table_name)) return {};
  std::string why;
  const auto c = tuner::vocab_coverage(t.aggregate, t.rows, why);
  if (!c) return QObject::tr("vocabulary coverage unavailable: %1").arg(QString::fromStdString(why));
  QStringList targets;
  for (const auto& x : c->targets)
    targets << QObject::tr("%1: %2 ids (%3 held out)")
                   .arg(QString::fromStdString(tuner::target_text(x.target_bp)), format_count(x.ids),
                        QString::number(100.0 * x.held_out_coverage, 'f', 2) + QStringLiteral(" %"));
  return QObject::tr("vocabulary coverage%1 (fitted on the first 70 % of lookups, scored on the rest): %2")
      .arg(c->exact() ? QString() : QObject::tr(" (estimated from a sample)"), targets.join(QStringLiteral(" · ")));
}

QString tableLlmSummary(const model::Profile& profile, const model::TableView& t) {
  QStringList parts;
  if (const QString a = activationText(profile, t); !a.isEmpty())
    parts << QObject::tr("activation per step: %1 (%2)").arg(a, activationDetail(profile, t));
  if (const QString h = lmHeadDetail(profile, t); !h.isEmpty()) parts << h;
  else if (const QString o = lmHeadText(profile, t); !o.isEmpty()) parts << QObject::tr("LM head: %1").arg(o);
  if (const QString v = vocabCoverageText(profile, t); !v.isEmpty()) parts << v;
  return parts.isEmpty() ? QString() : QStringLiteral("\n") + parts.join(QStringLiteral(" · "));
}

}  // namespace edo::gui
