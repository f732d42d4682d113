// Text that came from a recording (table names, command lines, host names) printed to a
// terminal: a name is data, never layout or a terminal command. Control characters (newline,
// tab, escape, C1 controls), bytes that are not UTF-8, and the invisible bidirectional
// overrides are shown as escapes (\n, \t, \x1b, \u{202e}); a backslash is doubled so that the
// escaped text reads back unambiguously. JSON output keeps names exact (JSON escapes them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edo::cli {

std::string terminal_safe(std::string_view text);

// Columns the (terminal_safe) text takes: one per code point.
size_t display_width(std::string_view safe_text);

// Pads safe_text with spaces to `width` columns (left-aligned); longer text is returned whole.
std::string pad_right(const std::string& safe_text, size_t width);

}  // namespace edo::cli
