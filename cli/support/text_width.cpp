#include "support/text_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "support/terminal.h"

namespace edo::cli {

size_t output_columns(bool wide) {
  if (wide) return SIZE_MAX;
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (end && *end == '\0' && v >= 20 && v <= 100000) return static_cast<size_t>(v);
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 100;
}

namespace {
// Byte offset of the code point that starts column `col` of s (s.size() when past the end).
size_t offset_of_column(std::string_view s, size_t col) {
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (w == col) return i;
    ++w;
  }
  return s.size();
}
}  // namespace

std::string abbreviate_middle(const std::string& safe_text, size_t width) {
  const size_t w = display_width(safe_text);
  if (w <= width) return safe_text;
  if (width <= 3) return std::string(width, '.');
  const size_t keep = width - 3, head = (keep + 1) / 2, tail = keep - head;
  return safe_text.substr(0, offset_of_column(safe_text, head)) + "..." +
         safe_text.substr(offset_of_column(safe_text, w - tail));
}

std::string wrap_words(std::string_view text, size_t width, std::string_view indent) {
  if (display_width(text) <= width) return std::string(text);  // spacing kept as it is
  std::vector<std::string> lines;
  size_t i = text.find_first_not_of(' ');
  if (i == std::string_view::npos) i = text.size();
  std::string cur(i, ' ');  // the line being filled: the first keeps the text's own indent
  bool has = false;         // whether it holds a word yet
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    std::string_view rest = text.substr(i, j - i);
    i = j;
    while (!rest.empty()) {
      const size_t used = display_width(cur), need = (has ? 1 : 0) + display_width(rest);
      if (used + need <= width) {
        if (has) cur += ' ';
        cur += rest;
        has = true;
        break;
      }
      if (has) {  // the word goes to the next line
        lines.push_back(cur);
        cur = std::string(indent);
        has = false;
        continue;
      }
      // A word longer than a whole line is cut where the line ends.
      const size_t cut = offset_of_column(rest, width > used ? width - used : 1);
      cur += rest.substr(0, cut);
      lines.push_back(cur);
      cur = std::string(indent);
      rest = rest.substr(cut);
    }
  }
  if (has) lines.push_back(cur);
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
  return out;
}

}  // namespace edo::cli
