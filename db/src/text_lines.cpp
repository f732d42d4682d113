#include "text_lines.h"

namespace edo::db {

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& n : items) {
    if (!out.empty()) out += '\n';
    out += n;
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& s, bool keep_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    if (keep_empty || end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace edo::db
