// The "trim vocabulary" candidate of a token table (issue 33 point 6; docs/tuning.md "LLM
// levers"): the table keeps the token ids its held-out lookups need and every other id reads
// the UNK row, through the remap `edo export --format vocab-remap` writes (vocab_trim_remap,
// edo/tuner/vocab_coverage.h: one remap for both). Offered for a token table only (a table the
// hooks noted an LM head for, tied or untied: its rows are a vocabulary), never for a
// recommender table, and only from an exact ordered sample (a remap must name every id kept).
//
// One candidate per coverage target (99, 99.9, 99.99 %) that drops rows, on the recorded row
// format (candidate optimizer "trim_vocab", measured as the baseline: the lookups read the same
// rows, renumbered):
//   - bytes: the kept rows' share of the table's weights, gradient and optimizer state (all per
//     row: vocab_trim; a tied head's are the table's own) plus the remap the model applies to
//     incoming ids (an int64 buffer of the old rows, edo.apply_plan's); not offered where that
//     buffer costs more than the dropped rows free;
//   - outside the tables (params, never counted as a table's saving): an untied head's dropped
//     rows (weights, gradient, optimizer state) and, for either head, the logits its softmax no
//     longer computes per step and their gradient (tokens per step x dropped ids x element size,
//     twice);
//   - error: the share of held-out lookups (the 30 % after the fit) that fall on dropped ids;
//   - needs retraining: the vocabulary, and with it the softmax, changes.
#pragma once

#include <string>
#include <vector>

#include "candidates.h"
#include "workload.h"

namespace edo::tuner {

// Why the group gets no trim candidate ("" when it gets them).
std::string trim_vocab_not_offered(const TableGroup& g);

// Appends the group's trim candidates, built on the baseline `base` (a copy: it is usually an
// element of `out`, which appending moves).
void add_trim_vocab_candidates(const TableGroup& g, Candidate base, std::vector<Candidate>& out);

}  // namespace edo::tuner
