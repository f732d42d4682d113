// The JSON object of a candidate's typed parameters (strategy_params.h): the text the .edodb
// stores (tune_candidates.params) and the "params" object of a plan file. Written and read
// only where the parameters leave or enter edo (db/, the plan writer and reader).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "edo/model/strategy_params.h"

namespace edo::model {

// The object, its keys in the parameters' order (StrategyParams::order, then the declaration's).
nlohmann::ordered_json params_to_json(const StrategyParams& p);
// Reads an object (throws std::invalid_argument when `j` is not one). A key this edo does not
// know, or one whose value does not have its field's type, is kept in `unknown` as its text.
StrategyParams params_from_json(const nlohmann::ordered_json& j);

// The compact text ("{}" when there are none), as tune_candidates.params holds it.
std::string params_to_text(const StrategyParams& p);
// Reads that text; "" reads as no parameters. Throws std::invalid_argument naming the problem
// when the text is not a JSON object.
StrategyParams params_from_text(const std::string& text);

}  // namespace edo::model
