// Vocabulary coverage and trimming of a token table (issue 33 point 6): how many token ids
// cover 99 %, 99.9 % and 99.99 % of the table's lookups, fitted on the first 70 % of the
// recorded order and scored on the rest, and the id remap of a table trimmed to a fitted set.
//
// A token table is a table the PyTorch hooks noted an LM head for, tied or untied
// (llm_facts.h): its rows are a vocabulary and its head's rows the softmax over it. Other
// tables (positions, categorical features) are not vocabularies a tokenizer could shrink.
//
// The fit uses the table's ordered sample (edo/stats/ordered_sample.h): every reference of the
// rows it samples, in stream order. At sample rate 1 (every row: the usual case for a
// vocabulary, whose references the tracer keeps up to its bound) the figures are exact counts;
// below 1 the id counts are the sampled set's scaled by 1 / rate (estimates, said as such) and
// no remap can be written (the sample does not name every id the data needs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/tuner/llm_facts.h"
#include "edo/stats/table_stats.h"

namespace edo::tuner {

// The coverage targets, in parts per 10,000 (exact comparison against integer counts).
inline constexpr uint32_t kVocabTargetsBp[] = {9900, 9990, 9999};

struct VocabTarget {
  uint32_t target_bp = 0;        // 9990 = 99.9 %
  uint64_t ids = 0;              // ids in the fitted set: the fewest most-read (fit part) ids reaching the target
  double fit_coverage = 0;       // share of the fit part's lookups on them
  double held_out_coverage = 0;  // share of the held-out part's lookups on them
  uint64_t held_out_missed = 0;  // held-out lookups of ids outside the set (scaled when sampled)
};

struct VocabCoverage {
  uint64_t rows = 0;               // the vocabulary
  uint64_t fit_lookups = 0;        // lookups before the cut
  uint64_t held_out_lookups = 0;   // lookups after it
  uint64_t fit_ids = 0;            // ids read before the cut (scaled when sampled)
  double sample_rate = 1;          // 1: exact
  bool exact() const { return sample_rate >= 1.0; }
  std::vector<VocabTarget> targets;  // one per kVocabTargetsBp
};

// The coverage of a table's recorded order, or nullopt with `why_not` (no ordered sample, an
// order that is not one stream's, too few lookups to hold any out).
std::optional<VocabCoverage> vocab_coverage(const stats::TableAggregate& counts, uint64_t rows, std::string& why_not,
                                            double fit_fraction = 0.7);

// The fitted set for `target_bp` as old ids ascending (the rows a trimmed table keeps), from
// an exact sample only; empty with `why_not` otherwise.
std::vector<uint64_t> vocab_fitted_ids(const stats::TableAggregate& counts, uint64_t rows, uint32_t target_bp,
                                       std::string& why_not, double fit_fraction = 0.7);

// The remap of a table trimmed to `kept` (old ids ascending, each below `rows`): new[old] is the
// old id's rank among the kept ids, and every dropped id maps to the new id of `unk_old`
// (an old id; added to the kept set when not in it). Throws std::invalid_argument when `unk_old`
// is not below `rows`.
struct VocabRemap {
  std::vector<uint64_t> kept;      // old ids ascending: new id i is old id kept[i]
  std::vector<uint64_t> new_of;    // rows entries: old id -> new id
  uint64_t unk_old = 0, unk_new = 0;
  bool unk_added = false;          // the UNK id was not in the fitted set
};
VocabRemap vocab_remap(std::vector<uint64_t> kept, uint64_t rows, uint64_t unk_old);

// The remap of a token table trimmed to its fitted set for `target_bp`, the one thing both
// `edo export --format vocab-remap` writes and the tuner's "trim vocabulary" candidate keeps:
// vocab_remap of vocab_fitted_ids, the UNK being `unk` (an old id) or, by default, the lowest
// kept id (no row added). nullopt with `why_not` when the recording cannot name every id (no
// exact ordered sample).
std::optional<VocabRemap> vocab_trim_remap(const stats::TableAggregate& counts, uint64_t rows, uint32_t target_bp,
                                           std::optional<uint64_t> unk, std::string& why_not);

// The "trim vocabulary" figures of a token table cut to the ids of one coverage target: the
// rows kept (the fitted set; the UNK row is one of them: the first kept id by default), the
// bytes those rows hold, what the dropped rows held in the table (weights, gradient, optimizer
// state: the same share of each, all being per row) and in an untied head (the softmax's
// output rows shrink with the vocabulary; a tied head's are the table's own), and the loss:
// the held-out lookups of dropped ids, which become UNK. Always needs retraining (a model
// with a smaller vocabulary and softmax). The trim target is 99.9 % (kTrimTargetBp).
inline constexpr uint32_t kTrimTargetBp = 9990;
struct VocabTrim {
  uint32_t target_bp = kTrimTargetBp;
  uint64_t rows = 0, kept_rows = 0, dropped_rows = 0;
  uint64_t kept_weight_bytes = 0;   // kept rows x dim x element size
  uint64_t table_bytes_saved = 0;   // the dropped rows' share of the table's weights, gradient, state
  uint64_t head_bytes_saved = 0;    // an untied head's, the same share; 0 when tied or none
  bool has_head = false, head_tied = false;
  uint64_t held_out_lost = 0, held_out_lookups = 0;
  bool exact = true;                // false: kept_rows is a sampled estimate
};
// `table_total_bytes`: the table's weights + gradient + optimizer state as recorded.
VocabTrim vocab_trim(const VocabCoverage& c, uint64_t dim, uint64_t element_bytes, uint64_t table_total_bytes,
                     const std::optional<LmHead>& head, uint32_t target_bp = kTrimTargetBp);

// Whether the hooks noted an LM head for the table (the definition of a token table above).
bool is_token_table(const model::Profile& profile, const std::string& table_name);

// "99.9 %" of a target.
std::string target_text(uint32_t target_bp);

}  // namespace edo::tuner
