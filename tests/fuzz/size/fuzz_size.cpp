// Fuzz target: edo::parse_size (edo tune --budget 24GiB, --measure-bytes) on any text.
// Beyond not crashing, both directions are checked against an independent reading of the
// grammar size.h documents: every accepted text must be in the grammar and mean what it says
// (compared in long double, within its precision); every text in the grammar whose value fits
// must be accepted; every refusal must be a std::invalid_argument with a message.
//
// The grammar as read here: optional spaces, a number (digits with at most one '.', at least
// one digit), at most one space, a unit (B, or case-insensitive kB..EB and KiB..EiB; "b" alone
// is bits, not bytes), optional spaces. A fraction needs a unit. Refusals the grammar allows:
// a value of 2^64-1 bytes or more, and a number longer than 30 characters (size.cpp's guard
// before its strtold).
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "edo/text/size.h"

namespace {

// The multiplier named by a unit by a plain table walk (independent of size.cpp), 0 when the
// unit is unknown.
long double multiplier(const std::string& unit) {
  if (unit.empty() || unit == "B") return 1;
  std::string u;
  for (char c : unit) u.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  const char* dec[] = {"kb", "mb", "gb", "tb", "pb", "eb"};
  const char* bin[] = {"kib", "mib", "gib", "tib", "pib", "eib"};
  for (int i = 0; i < 6; ++i) {
    if (u == dec[i]) return std::pow(1000.0L, i + 1);
    if (u == bin[i]) return std::pow(1024.0L, i + 1);
  }
  return 0;
}

struct Reading {
  bool in_grammar = false;
  std::string number;
  long double value = 0;  // bytes, before rounding down
};

Reading read(const std::string& t) {
  Reading r;
  size_t i = 0;
  const size_t n = t.size();
  while (i < n && t[i] == ' ') ++i;
  const size_t start = i;
  int digits = 0, dots = 0;
  for (; i < n && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.'); ++i) {
    if (t[i] == '.') ++dots;
    else ++digits;
  }
  if (digits == 0 || dots > 1) return r;
  r.number = t.substr(start, i - start);
  if (i < n && t[i] == ' ') ++i;
  const size_t unit_start = i;
  while (i < n && std::isalpha(static_cast<unsigned char>(t[i]))) ++i;
  const std::string unit = t.substr(unit_start, i - unit_start);
  while (i < n && t[i] == ' ') ++i;
  if (i != n) return r;
  const long double mult = multiplier(unit);
  if (mult == 0) return r;
  if (dots == 1 && unit.empty()) return r;
  r.in_grammar = true;
  r.value = std::strtold(r.number.c_str(), nullptr) * mult;
  return r;
}

[[noreturn]] void finding(const char* what, const std::string& text) {
  std::fprintf(stderr, "fuzz_size: %s: '%s'\n", what, text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Reading r = read(text);
  uint64_t bytes = 0;
  try {
    bytes = edo::parse_size(text);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).empty()) finding("refused without a reason", text);
    const bool fits = r.value < 18446744073709551615.0L;
    if (r.in_grammar && fits && r.number.size() <= 30) finding("refused a size in the grammar", text);
    return 0;
  }
  if (!r.in_grammar) finding("accepted text outside the grammar", text);
  // parse_size rounds down to a whole byte; long double carries 64 bits of mantissa.
  const long double got = static_cast<long double>(bytes);
  if (got > r.value * (1 + 1e-15L) + 1e-9L || got + 1 < r.value * (1 - 1e-15L)) finding("wrong value", text);
  return 0;
}
