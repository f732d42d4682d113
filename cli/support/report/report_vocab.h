// The vocabulary coverage of token tables in `edo report` (issue 33 point 6): per token table
// (a table with an LM head note, edo/tuner/vocab_coverage.h) the ids that cover 99, 99.9 and
// 99.99 % of the lookups, fitted on the first 70 % of the recorded order and scored on the
// rest, and the "trim vocabulary" figures at 99.9 %.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::cli {

// "vocab" of a table's JSON: null for a table that is not a token table; {"unavailable": why}
// when its order cannot say; else {fit_fraction, fit_lookups, held_out_lookups, fit_ids,
// sample_rate, exact, coverage: [{target, ids, fit_coverage, held_out_coverage,
// held_out_missed_lookups}], trim: {target, rows, kept_rows, dropped_rows, kept_weight_bytes,
// table_bytes_saved, head_bytes_saved, head, held_out_lost_lookups, held_out_lookups,
// needs_retraining}}.
nlohmann::ordered_json vocab_json(const model::Profile& profile, const model::TableView& t);

// The text report's lines (wrapped by the caller), one block per token table; empty when none.
std::vector<std::string> vocab_text(const model::Profile& profile, const std::vector<model::TableView>& tables);

}  // namespace edo::cli
