// A plan document as a JSON value, to and from text: what plan_to_yaml and plan_from_text do
// around the edo.plan/1 shape (plan_io.h), for any part of a plan. Private to tuner/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace edo::tuner {

// `doc` as YAML (every key and text double-quoted, number lists on one line), after a `comment`
// line unless it is empty.
std::string document_to_yaml(const nlohmann::ordered_json& doc, const std::string& comment);
// JSON (text starting with '{') or YAML text as a JSON value, with the bounds plan import puts on
// hostile input (size, nesting, alias expansion); throws PlanError.
nlohmann::ordered_json plan_document_from_text(const std::string& text);

}  // namespace edo::tuner
