#include "trim_candidates.h"

#include "edo/model/profile.h"
#include "activation_notes.h"
#include "edo/tuner/vocab_coverage.h"

namespace edo::tuner {

using P = model::StrategyParams;

namespace {

// The --coverage value of `edo export --format vocab-remap` for a target ("99.9").
std::string coverage_arg(uint32_t bp) {
  std::string s = target_text(bp);
  return s.substr(0, s.find(' '));
}

}  // namespace

std::string trim_vocab_not_offered(const TableGroup& g) {
  if (!g.lm_head) return "not a token table (the hooks noted no LM head for it)";
  // A tied head registered under its own name is a member of the group: the one sharer allowed.
  for (const auto& m : g.members)
    if (m != g.lm_head->name) return "shares its weights with " + m + ", which is not its LM head";
  if (!g.identical.empty()) return "holds the same weights as another table";
  if (g.lm_head->rows != 0 && g.lm_head->rows != g.rows) return "its head's rows are not the table's";
  std::string why;
  if (!vocab_coverage(g.counts, g.rows, why)) return why;
  return "";
}

void add_trim_vocab_candidates(const TableGroup& g, Candidate base, std::vector<Candidate>& out) {
  if (!trim_vocab_not_offered(g).empty()) return;
  std::string why;
  const auto cov = vocab_coverage(g.counts, g.rows, why);
  const uint64_t element = model::dtype_size(g.dtype);
  const uint64_t tokens = activation_rows_per_step(g);  // the rows of the head's logits
  const uint64_t logit_element = g.lm_head->dtype.empty() ? element : model::dtype_size(g.lm_head->dtype);
  uint64_t last_kept = 0;
  for (uint32_t bp : kVocabTargetsBp) {
    // The rows kept are the remap's (the export's), not a count alone: the one remap function.
    const auto remap = vocab_trim_remap(g.counts, g.rows, bp, std::nullopt, why);
    if (!remap) return;  // a sampled order: no remap names every id the data needs
    const VocabTrim t = vocab_trim(*cov, g.dim, element, base.device_bytes, g.lm_head, bp);
    const uint64_t kept = remap->kept.size();
    // The remap the model applies to incoming ids lives beside the table: one int64 per old id.
    const uint64_t remap_bytes = g.rows * 8;
    if (kept != t.kept_rows || kept >= g.rows || kept == last_kept || t.table_bytes_saved <= remap_bytes) continue;
    last_kept = kept;
    Candidate c = base;
    c.baseline = false;
    c.optimizer = "trim_vocab";
    c.measure_as = 0;  // the same lookups on the same format, renumbered
    c.needs_retraining = true;
    c.device_bytes = base.device_bytes - t.table_bytes_saved + remap_bytes;
    const uint64_t dropped = g.rows - kept;
    const uint64_t logits = 2 * tokens * dropped * logit_element;  // the logits and their gradient
    c.held_out_error = t.held_out_lookups ? static_cast<double>(t.held_out_lost) / static_cast<double>(t.held_out_lookups) : 0.0;
    model::StrategyParams& p = c.params;
    p.set(&P::vocab_coverage, coverage_arg(bp)).set(&P::kept_rows, kept).set(&P::unk_old_id, remap->unk_old);
    p.set(&P::held_out_lookups, t.held_out_lookups).set(&P::held_out_lost_lookups, t.held_out_lost);
    p.set(&P::saved_table_bytes, t.table_bytes_saved).set(&P::remap_bytes, remap_bytes).set(&P::head, g.lm_head->name);
    p.set(&P::head_kind, g.lm_head->tied ? "tied" : "untied").set(&P::saved_head_bytes, t.head_bytes_saved);
    p.set(&P::saved_logit_bytes_per_step, logits);
    out.push_back(c);
  }
}

}  // namespace edo::tuner
