// The language-model facts of `edo report` (issue 33): each table's activation memory per step
// and the token table's LM head (tied or untied), as JSON fields of a table and as the text
// report's "language model" section. The figures come from edo/tuner/llm_facts.h.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::cli {

// Adds to a table's JSON (table_json): "activation" ({output_bytes, grad_bytes, peak_bytes,
// calls, shape, dtype} of the step with the most, or null), "lm_head" ({name, tied, rows, dim,
// dtype, weight_bytes, grad_bytes, optimizer_bytes, optimizer_state, total_bytes,
// dense_reads_per_step, dense_read_bytes_per_step}, or null) and "lm_head_of" (the token
// table's name when this table is a tied head registered under its own name, else null).
void add_llm_json(const model::Profile& profile, const model::TableView& t, nlohmann::ordered_json& j);

// The text report's section: `table`, a header and one row per table with an activation or a
// head (printed as they are: columns), and `notes`, a line per head with its parts and one for
// the family's memory (printed wrapped). Both empty when the recording has neither (not a
// PyTorch job, or one recorded by an older edo).
struct LlmText {
  std::vector<std::string> table, notes;
};
LlmText llm_text(const model::Profile& profile, const std::vector<model::TableView>& tables);

// Over the tables: the LM heads' memory (untied: weights + gradient + optimizer state) and the
// sum of the tables' activation peaks, for "memory" in the JSON.
uint64_t lm_head_bytes(const model::Profile& profile, const std::vector<model::TableView>& tables);
uint64_t activation_peak_bytes(const model::Profile& profile, const std::vector<model::TableView>& tables);

}  // namespace edo::cli
