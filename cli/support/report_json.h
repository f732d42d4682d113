// JSON renderings shared by `edo report --json` and `edo diff --json` (schema edo.report/2:
// keys may be added, never renamed). Names are exact here (JSON escapes them).
#pragma once

#include <nlohmann/json.hpp>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"

namespace edo::cli {

nlohmann::ordered_json session_json(const model::Session& s);
// top_rows > 0 adds "top_rows": [[row, count], ...] (the most-read rows).
nlohmann::ordered_json table_json(const model::TableView& t, size_t top_rows = 0);
nlohmann::ordered_json report_json(const model::Profile& profile, const std::vector<model::TableView>& tables, size_t top_rows = 0);

}  // namespace edo::cli
