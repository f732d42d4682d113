// JSON renderings shared by `edo report --json` and `edo diff --json` (schema edo.report/2:
// keys may be added, never renamed). Names are exact here (JSON escapes them).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::cli {

nlohmann::ordered_json session_json(const model::Session& s);
// A loss as JSON: the number, or "nan", "inf", "-inf" (JSON has no such numbers).
nlohmann::ordered_json loss_value(double v);
// {"steps_with_loss", "first": {"step", "loss"}, "last", "final" (mean of the last 10 %, at
// least one), "final_of", "first_nonfinite_step"}, or null without losses.
nlohmann::ordered_json losses_json(const std::vector<model::StepLoss>& losses);
// {"kind", "lr", "eps", "weight_decay", "betas": [b1, b2], "momentum", "initial_accumulator_value",
// "maximize"}, or null when not recorded.
nlohmann::ordered_json optimizer_json(const std::optional<model::OptimizerParams>& o);
// top_rows > 0 adds "top_rows": [[row, count], ...] (the most-read rows).
nlohmann::ordered_json table_json(const model::TableView& t, size_t top_rows = 0);
nlohmann::ordered_json report_json(const model::Profile& profile, const std::vector<model::TableView>& tables, size_t top_rows = 0);

}  // namespace edo::cli
