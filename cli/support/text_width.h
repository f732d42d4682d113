// Fitting the text report to the terminal: how many columns there are, and long names and
// notes made to fit them (abbreviated in the middle, wrapped at spaces). --wide keeps every
// line whole, as a pipe into another program may want.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edo::cli {

// Columns the text output may use: unlimited (SIZE_MAX) when `wide`; else COLUMNS when it is a
// number >= 20 (the shell's convention, and how a test or a script asks for a width); else the
// terminal's width when stdout is one (ioctl TIOCGWINSZ); else 100.
size_t output_columns(bool wide);

// safe_text (already terminal_safe) when it fits `width` columns, else its start and end with
// "..." between, `width` columns in all: the start and the end of a qualified name
// (model.embeddings.word_embeddings) are the parts that tell names apart.
std::string abbreviate_middle(const std::string& safe_text, size_t width);

// Text wrapped at spaces into lines of at most `width` columns (a word longer than a line is
// cut), each line after the first starting with `indent`; lines joined by '\n', no final one.
std::string wrap_words(std::string_view text, size_t width, std::string_view indent = "");

}  // namespace edo::cli
