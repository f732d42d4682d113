#include "edo/tuner/vocab_coverage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "edo/tuner/llm_facts.h"

namespace edo::tuner {

namespace {

// Per sampled id: references before and after the cut; ids ranked by the fit part (most read
// first, ties to the lower id, so the same recording gives the same set).
struct VocabSplit {
  struct Id {
    uint64_t id = 0, fit = 0, held = 0;
  };
  std::vector<Id> ranked;        // ids read before the cut, in fit rank order
  uint64_t fit_refs = 0, held_refs = 0;
  uint64_t held_refs_unseen = 0; // held-out references of ids never read before the cut
  uint64_t fit_lookups = 0, held_lookups = 0;
  double rate = 1;
};

std::optional<VocabSplit> split_sample(const stats::TableAggregate& counts, uint64_t rows, std::string& why_not,
                                       double fit_fraction) {
  const stats::OrderedSample* s = counts.ordered_sample();
  if (!s) {
    why_not = "the recording has no ordered sample of this table";
    return std::nullopt;
  }
  if (!s->valid) {
    why_not = "the ordered sample is not one stream's order (several processes, or counted on a GPU)";
    return std::nullopt;
  }
  const uint64_t cut = s->begin + static_cast<uint64_t>(std::floor(fit_fraction * static_cast<double>(s->end - s->begin)));
  if (s->threshold == 0 || cut <= s->begin || cut >= s->end) {
    why_not = "too few lookups to hold any out";
    return std::nullopt;
  }
  VocabSplit v;
  v.rate = s->rate();
  v.fit_lookups = cut - s->begin;
  v.held_lookups = s->end - cut;
  std::unordered_map<uint64_t, VocabSplit::Id> per;
  for (const auto& r : s->refs) {
    if (r.row >= rows) continue;  // the sample holds in-range rows only; a damaged file is not trusted
    auto& e = per[r.row];
    e.id = r.row;
    if (r.position < cut) {
      ++e.fit;
      ++v.fit_refs;
    } else {
      ++e.held;
      ++v.held_refs;
    }
  }
  for (const auto& [id, e] : per) {
    if (e.fit > 0) v.ranked.push_back(e);
    else v.held_refs_unseen += e.held;
  }
  std::sort(v.ranked.begin(), v.ranked.end(), [](const VocabSplit::Id& a, const VocabSplit::Id& b) {
    return a.fit != b.fit ? a.fit > b.fit : a.id < b.id;
  });
  if (v.fit_refs == 0) {
    why_not = "no sampled lookup before the cut";
    return std::nullopt;
  }
  return v;
}

// The fewest ranked ids whose fit references reach target_bp / 10,000 of all (integers: exact).
size_t fitted_count(const VocabSplit& v, uint32_t target_bp) {
  uint64_t cum = 0;
  for (size_t k = 0; k < v.ranked.size(); ++k) {
    cum += v.ranked[k].fit;
    if (cum * 10000 >= static_cast<uint64_t>(target_bp) * v.fit_refs) return k + 1;
  }
  return v.ranked.size();
}

uint64_t scaled(uint64_t n, double rate) { return static_cast<uint64_t>(std::llround(static_cast<double>(n) / rate)); }

}  // namespace

std::optional<VocabCoverage> vocab_coverage(const stats::TableAggregate& counts, uint64_t rows, std::string& why_not,
                                            double fit_fraction) {
  const auto v = split_sample(counts, rows, why_not, fit_fraction);
  if (!v) return std::nullopt;
  VocabCoverage c;
  c.rows = rows;
  c.fit_lookups = v->fit_lookups;
  c.held_out_lookups = v->held_lookups;
  c.sample_rate = v->rate;
  c.fit_ids = std::min(rows, scaled(v->ranked.size(), v->rate));
  for (uint32_t bp : kVocabTargetsBp) {
    const size_t k = fitted_count(*v, bp);
    uint64_t fit = 0, held = 0;
    for (size_t i = 0; i < k; ++i) {
      fit += v->ranked[i].fit;
      held += v->ranked[i].held;
    }
    VocabTarget t;
    t.target_bp = bp;
    t.ids = std::min(rows, scaled(k, v->rate));
    t.fit_coverage = static_cast<double>(fit) / static_cast<double>(v->fit_refs);
    t.held_out_coverage = v->held_refs ? static_cast<double>(held) / static_cast<double>(v->held_refs) : 1.0;
    t.held_out_missed = scaled(v->held_refs - held, v->rate);
    c.targets.push_back(t);
  }
  return c;
}

std::vector<uint64_t> vocab_fitted_ids(const stats::TableAggregate& counts, uint64_t rows, uint32_t target_bp, std::string& why_not,
                                       double fit_fraction) {
  const auto v = split_sample(counts, rows, why_not, fit_fraction);
  if (!v) return {};
  if (v->rate < 1.0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", v->rate);
    why_not = std::string("the ordered sample holds a sample of the ids (rate ") + buf +
              "): a remap needs every id the data reads; the tracer keeps every reference in order only up to its bound "
              "(65,536 a table, docs/memory.md): record fewer steps";
    return {};
  }
  const size_t k = fitted_count(*v, target_bp);
  std::vector<uint64_t> ids;
  ids.reserve(k);
  for (size_t i = 0; i < k; ++i) ids.push_back(v->ranked[i].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

VocabRemap vocab_remap(std::vector<uint64_t> kept, uint64_t rows, uint64_t unk_old) {
  if (unk_old >= rows)
    throw std::invalid_argument("UNK id " + std::to_string(unk_old) + " is not a row of the table (0.." + std::to_string(rows - 1) + ")");
  VocabRemap r;
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  if (!std::binary_search(kept.begin(), kept.end(), unk_old)) {
    kept.insert(std::lower_bound(kept.begin(), kept.end(), unk_old), unk_old);
    r.unk_added = true;
  }
  r.unk_old = unk_old;
  r.unk_new = static_cast<uint64_t>(std::lower_bound(kept.begin(), kept.end(), unk_old) - kept.begin());
  r.new_of.assign(rows, r.unk_new);
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] >= rows) throw std::invalid_argument("kept id " + std::to_string(kept[i]) + " is not a row of the table");
    r.new_of[kept[i]] = i;
  }
  r.kept = std::move(kept);
  return r;
}

std::optional<VocabRemap> vocab_trim_remap(const stats::TableAggregate& counts, uint64_t rows, uint32_t target_bp,
                                           std::optional<uint64_t> unk, std::string& why_not) {
  const auto kept = vocab_fitted_ids(counts, rows, target_bp, why_not);
  if (kept.empty()) return std::nullopt;
  return vocab_remap(kept, rows, unk.value_or(kept.front()));
}

VocabTrim vocab_trim(const VocabCoverage& c, uint64_t dim, uint64_t element_bytes, uint64_t table_total_bytes,
                     const std::optional<LmHead>& head, uint32_t target_bp) {
  VocabTrim t;
  t.target_bp = target_bp;
  t.rows = c.rows;
  t.exact = c.exact();
  t.held_out_lookups = c.held_out_lookups;
  for (const auto& x : c.targets)
    if (x.target_bp == target_bp) {
      t.kept_rows = x.ids;
      t.held_out_lost = x.held_out_missed;
    }
  t.dropped_rows = c.rows - t.kept_rows;
  t.kept_weight_bytes = t.kept_rows * dim * element_bytes;
  // The dropped share of per-row bytes; 128-bit so that 10^9 rows x terabytes cannot overflow.
  auto share = [&](uint64_t bytes) {
    return c.rows ? static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * t.dropped_rows / c.rows) : 0;
  };
  t.table_bytes_saved = share(table_total_bytes);
  if (head) {
    t.has_head = true;
    t.head_tied = head->tied;
    if (!head->tied) t.head_bytes_saved = share(head->total_bytes());
  }
  return t;
}

bool is_token_table(const model::Profile& profile, const std::string& table_name) {
  return lm_head_of(profile, table_name).has_value();
}

std::string target_text(uint32_t target_bp) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", target_bp / 100.0);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " %";
}

}  // namespace edo::tuner
