// The library's own lines on stderr and its clock (tracer_log.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace edo::capture {

void tracer_log(const std::string& line);     // one line on stderr, prefixed "edo: "
void tracer_verbose(const std::string& line); // only with EDO_VERBOSE=1
int64_t now_ns();  // monotonic

}  // namespace edo::capture
