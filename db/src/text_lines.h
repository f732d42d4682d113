// Columns that hold a list of text items, one per line (a kernel's tables, a tune run's notes).
// Private to db/.
#pragma once

#include <string>
#include <vector>

namespace edo::db {

// The items joined by '\n' (an empty item before any other adds nothing).
std::string join_lines(const std::vector<std::string>& items);
// The items of `s`; keep_empty: an empty line is an empty item (notes), else nothing (names).
std::vector<std::string> split_lines(const std::string& s, bool keep_empty);

}  // namespace edo::db
