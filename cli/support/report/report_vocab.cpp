#include "support/report/report_vocab.h"

#include <fmt/format.h>

#include "edo/tuner/llm_facts.h"
#include "edo/tuner/vocab_coverage.h"
#include "support/terminal.h"

namespace edo::cli {

using json = nlohmann::ordered_json;

namespace {

struct VocabFacts {
  std::optional<tuner::VocabCoverage> coverage;
  std::string why_not;
  tuner::VocabTrim trim;
};

VocabFacts vocab_facts_of(const model::Profile& profile, const model::TableView& t) {
  VocabFacts f;
  f.coverage = tuner::vocab_coverage(t.aggregate, t.rows, f.why_not);
  if (f.coverage)
    f.trim = tuner::vocab_trim(*f.coverage, t.dim, model::dtype_size(t.dtype), t.total_bytes(), tuner::lm_head_of(profile, t.table_name));
  return f;
}

double ratio_of(uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

}  // namespace

json vocab_json(const model::Profile& profile, const model::TableView& t) {
  if (!tuner::is_token_table(profile, t.table_name)) return nullptr;
  const VocabFacts f = vocab_facts_of(profile, t);
  if (!f.coverage) return {{"unavailable", f.why_not}};
  const auto& c = *f.coverage;
  json cov = json::array();
  for (const auto& x : c.targets)
    cov.push_back({{"target", x.target_bp / 10000.0},
                   {"ids", x.ids},
                   {"fit_coverage", x.fit_coverage},
                   {"held_out_coverage", x.held_out_coverage},
                   {"held_out_missed_lookups", x.held_out_missed}});
  const auto& tr = f.trim;
  return {{"fit_fraction", 0.7},
          {"fit_lookups", c.fit_lookups},
          {"held_out_lookups", c.held_out_lookups},
          {"fit_ids", c.fit_ids},
          {"sample_rate", c.sample_rate},
          {"exact", c.exact()},
          {"coverage", cov},
          {"trim",
           {{"target", tr.target_bp / 10000.0},
            {"rows", tr.rows},
            {"kept_rows", tr.kept_rows},
            {"dropped_rows", tr.dropped_rows},
            {"kept_weight_bytes", tr.kept_weight_bytes},
            {"table_bytes_saved", tr.table_bytes_saved},
            {"head_bytes_saved", tr.head_bytes_saved},
            {"head", !tr.has_head ? json(nullptr) : json(tr.head_tied ? "tied" : "untied")},
            {"held_out_lost_lookups", tr.held_out_lost},
            {"held_out_lookups", tr.held_out_lookups},
            {"needs_retraining", true}}}};
}

std::vector<std::string> vocab_text(const model::Profile& profile, const std::vector<model::TableView>& tables) {
  std::vector<std::string> out;
  for (const auto& t : tables) {
    if (!tuner::is_token_table(profile, t.table_name)) continue;
    const std::string name = terminal_safe(t.name);
    const VocabFacts f = vocab_facts_of(profile, t);
    if (!f.coverage) {
      out.push_back(fmt::format("  {}: vocabulary coverage unknown: {}", name, f.why_not));
      continue;
    }
    const auto& c = *f.coverage;
    std::string line = fmt::format("  {}: vocabulary coverage{}, fitted on the first 70 % of the order ({} lookups, {} of {} ids read), "
                                   "held out on the rest ({} lookups):",
                                   name, c.exact() ? "" : fmt::format(" (estimated from a {:.3g} % sample of the ids)", 100 * c.sample_rate),
                                   c.fit_lookups, c.fit_ids, c.rows, c.held_out_lookups);
    for (size_t i = 0; i < c.targets.size(); ++i) {
      const auto& x = c.targets[i];
      line += fmt::format("{} {} of lookups: {} ids (held out: {:.2f} %)", i ? ";" : "", tuner::target_text(x.target_bp), x.ids,
                          100 * x.held_out_coverage);
    }
    out.push_back(line);
    const auto& tr = f.trim;
    std::string trim = fmt::format("  {}: trim vocabulary to the {} set: keep {} of {} rows ({} of weights), saves {} of the table", name,
                                   tuner::target_text(tr.target_bp), tr.kept_rows, tr.rows, model::format_bytes(tr.kept_weight_bytes),
                                   model::format_bytes(tr.table_bytes_saved));
    if (tr.has_head && tr.head_tied) trim += fmt::format(" (the tied head's softmax shrinks to {} outputs with it)", tr.kept_rows);
    else if (tr.has_head) trim += fmt::format(" and {} of the untied head (its softmax shrinks to {} outputs)", model::format_bytes(tr.head_bytes_saved), tr.kept_rows);
    trim += fmt::format("; loses {} of {} held-out lookups ({:.3f} %: dropped ids become UNK); needs retraining; "
                        "`edo export --format vocab-remap --table {}` writes its id remap",
                        tr.held_out_lost, tr.held_out_lookups, 100 * ratio_of(tr.held_out_lost, tr.held_out_lookups), name);
    out.push_back(trim);
  }
  return out;
}

}  // namespace edo::cli
