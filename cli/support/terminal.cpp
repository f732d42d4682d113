#include "support/terminal.h"

#include <cstdint>
#include <cstdio>

namespace edo::cli {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (1..4) and its code point; 0 when the
// bytes there are not UTF-8 (overlong forms and surrogates included).
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t n = 0;
  uint32_t min = 0;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) ||                      // C1 controls (8-bit CSI, ...)
         (cp >= 0x202A && cp <= 0x202E) ||                  // bidirectional embeddings/overrides
         (cp >= 0x2066 && cp <= 0x2069) ||                  // bidirectional isolates
         cp == 0x200E || cp == 0x200F || cp == 0x061C ||    // direction marks
         cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF;      // line/paragraph separators, BOM
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (invisible_control(cp)) {
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad_right(const std::string& safe_text, size_t width) {
  const size_t w = display_width(safe_text);
  return w >= width ? safe_text : safe_text + std::string(width - w, ' ');
}

}  // namespace edo::cli
