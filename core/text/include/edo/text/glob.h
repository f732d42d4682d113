// Table-name patterns as users write them (`edo tune --tables 'emb_*'`): shell-style globs.
#pragma once

#include <string>

namespace edo {

// True when `name` matches the glob (`*` any run, `?` one character, `[...]` a set).
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace edo
