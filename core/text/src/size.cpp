#include "edo/text/size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace edo {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw std::invalid_argument("'" + text + "' is not a size (" + why +
                              "); write e.g. 24GiB, 500MB, 1.5TiB or a plain number of bytes");
}

}  // namespace

uint64_t parse_size(const std::string& text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && text[i] == ' ') ++i;
  const size_t num_start = i;
  bool digits = false, dot = false;
  while (i < n && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
    if (text[i] == '.') dot = true;
    else digits = true;
    ++i;
  }
  if (!digits) bad(text, "no number");
  const std::string number = text.substr(num_start, i - num_start);
  if (i < n && text[i] == ' ') ++i;
  std::string unit;
  while (i < n && std::isalpha(static_cast<unsigned char>(text[i]))) unit.push_back(text[i++]);
  while (i < n && text[i] == ' ') ++i;
  if (i != n) bad(text, "unexpected '" + text.substr(i, 1) + "'");
  std::string u;
  for (char c : unit) u.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  long double mult;
  if (u.empty() || unit == "B") mult = 1;
  else if (u == "kb") mult = 1e3L;
  else if (u == "mb") mult = 1e6L;
  else if (u == "gb") mult = 1e9L;
  else if (u == "tb") mult = 1e12L;
  else if (u == "pb") mult = 1e15L;
  else if (u == "kib") mult = 1024.0L;
  else if (u == "mib") mult = 1024.0L * 1024;
  else if (u == "gib") mult = 1024.0L * 1024 * 1024;
  else if (u == "tib") mult = 1024.0L * 1024 * 1024 * 1024;
  else if (u == "pib") mult = 1024.0L * 1024 * 1024 * 1024 * 1024;
  // What model::format_bytes writes above 1024 PiB.
  else if (u == "eb") mult = 1e18L;
  else if (u == "eib") mult = 1024.0L * 1024 * 1024 * 1024 * 1024 * 1024;
  else bad(text, "unknown unit '" + unit + "'");
  if (dot && u.empty()) bad(text, "a fraction of a byte");
  if (number.size() > 30) bad(text, "too large");
  const long double value = std::strtold(number.c_str(), nullptr) * mult;
  if (!(value < 18446744073709551615.0L)) bad(text, "too large");
  return static_cast<uint64_t>(std::floor(value));
}

}  // namespace edo
