// Text helpers of the plan documents (private to tuner/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::tuner {

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (JSON and YAML carry text only).
std::string valid_utf8(const std::string& s);
// The code points of `s` (invalid bytes as U+FFFD).
std::vector<uint32_t> code_points(const std::string& s);

}  // namespace edo::tuner
