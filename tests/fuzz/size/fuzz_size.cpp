// Fuzz target: edo::model::parse_size on any text. Beyond not crashing, every accepted text
// must mean what it says: checked against an independent reading in long double (within its
// precision) and against the grammar (digits, optional fraction, optional unit); every refused
// text must come with a reason.
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "edo/model/units.h"

namespace {

// The multiplier named by a unit, by a plain table walk (independent of units.cpp).
long double multiplier(std::string u) {
  for (auto& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const char* dec[] = {"b", "kb", "mb", "gb", "tb", "pb"};
  const char* bin[] = {"b", "kib", "mib", "gib", "tib", "pib"};
  if (u.empty()) return 1;
  for (int i = 0; i < 6; ++i) {
    if (u == dec[i]) return std::pow(1000.0L, i);
    if (u == bin[i]) return std::pow(1024.0L, i);
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto bytes = edo::model::parse_size(text, &error);
  if (!bytes) {
    if (error.empty()) std::abort();  // refused without a reason
    return 0;
  }
  // Grammar: digits [. digits] [' '] unit
  size_t i = 0;
  while (i < size && std::isdigit(data[i])) ++i;
  if (i == 0) std::abort();
  size_t end_number = i;
  if (i < size && data[i] == '.') {
    ++i;
    const size_t f = i;
    while (i < size && std::isdigit(data[i])) ++i;
    if (i == f) std::abort();
    end_number = i;
  }
  if (i < size && data[i] == ' ') ++i;
  const long double mult = multiplier(std::string(text.substr(i)));
  if (mult == 0) std::abort();  // accepted an unknown unit
  const long double expected = std::strtold(std::string(text.substr(0, end_number)).c_str(), nullptr) * mult;
  // parse_size rounds down to a whole byte; long double has 64 bits of mantissa.
  const long double got = static_cast<long double>(*bytes);
  if (got > expected * (1 + 1e-15L) + 1e-9L || got + 1 < expected * (1 - 1e-15L)) std::abort();
  return 0;
}
