// A table's language-model facts in the dashboard's words (issue 33): its activation memory per
// step and its LM head, as `edo report` prints them (edo/tuner/llm_facts.h reads both from the
// recording's pytorch.activation / pytorch.lm_head notes). Empty text when not recorded.
#pragma once

#include <QString>

#include <cstdint>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::gui {

// "6.00 KiB": the activation peak (output + gradient) of the step with the most; "" when none.
QString activationText(const model::Profile& profile, const model::TableView& t);
// Its sort key: the peak bytes (0 when none).
uint64_t activationPeakBytes(const model::Profile& profile, const model::TableView& t);
// "3.00 KiB output + 3.00 KiB gradient, 4 × 12 × 16 fp32, 1 call per step"; "" when none.
QString activationDetail(const model::Profile& profile, const model::TableView& t);
// "lm_head (untied, 125.00 KiB)" / "lm_head (tied)" for a token table; "head of wte (tied)" for
// a tied head registered under its own name; "" otherwise.
QString lmHeadText(const model::Profile& profile, const model::TableView& t);
// Its sort key: the head's own bytes (0 when tied or none).
uint64_t lmHeadBytes(const model::Profile& profile, const model::TableView& t);
// A sentence for the Table view: the head's parts and reads per step; "" when none.
QString lmHeadDetail(const model::Profile& profile, const model::TableView& t);

// A token table's vocabulary coverage, as `edo report` prints it: "vocabulary coverage (fitted on
// the first 70 % of lookups, scored on the rest): 99 %: 812 ids (98.1 % held out) · 99.9 %: …";
// "" for a table that is not a token table; the reason when its order cannot say.
QString vocabCoverageText(const model::Profile& profile, const model::TableView& t);

// What the Table view adds to its summary line: "\nactivation per step: … · LM head … ·
// vocabulary coverage …"; "" when none was recorded.
QString tableLlmSummary(const model::Profile& profile, const model::TableView& t);

}  // namespace edo::gui
