// parse_size: see units.h. Integer arithmetic only (no strtod), so "0.1GB" is exactly 10^8
// bytes and no spelling can produce NaN, infinity or a silently wrapped value.
#include "edo/model/units.h"

#include <cctype>

namespace edo::model {
namespace {

using u128 = unsigned __int128;
constexpr u128 kMax = ~uint64_t{0};

std::optional<uint64_t> fail(std::string* error, std::string what) {
  if (error) *error = std::move(what);
  return std::nullopt;
}

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The multiplier of a unit suffix ("" = bytes), or 0 when it is not one.
u128 unit_multiplier(std::string_view unit) {
  if (unit.empty() || equals_ci(unit, "B")) return 1;
  struct Unit {
    const char* decimal;
    const char* binary;
  };
  static const Unit units[] = {{"kB", "KiB"}, {"MB", "MiB"}, {"GB", "GiB"}, {"TB", "TiB"}, {"PB", "PiB"}};
  u128 dec = 1, bin = 1;
  for (const auto& u : units) {
    dec *= 1000;
    bin *= 1024;
    if (equals_ci(unit, u.decimal)) return dec;
    if (equals_ci(unit, u.binary)) return bin;
  }
  return 0;
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text, std::string* error) {
  size_t i = 0;
  const size_t n = text.size();
  if (n == 0) return fail(error, "empty size");
  if (text[0] == '-' || text[0] == '+') return fail(error, "a size has no sign");
  u128 whole = 0;
  size_t whole_digits = 0;
  while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > kMax) return fail(error, "too large (at most 2^64-1 bytes)");
    ++whole_digits;
    ++i;
  }
  // Fraction digits beyond 19 cannot change a whole byte (1 PiB < 10^16 bytes).
  u128 frac = 0, frac_scale = 1;
  size_t frac_digits = 0;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (frac_digits < 19) {
        frac = frac * 10 + static_cast<unsigned>(text[i] - '0');
        frac_scale *= 10;
      }
      ++frac_digits;
      ++i;
    }
    if (frac_digits == 0) return fail(error, "a '.' needs digits after it");
  }
  if (whole_digits == 0) return fail(error, "a size starts with a number, e.g. 24GiB, 500MB or 4096");
  if (i + 1 < n && text[i] == ' ') ++i;  // "24 GiB"; a trailing space is not a unit
  const std::string_view unit = text.substr(i);
  const u128 mult = unit_multiplier(unit);
  if (mult == 0) return fail(error, "unknown unit '" + std::string(unit) + "' (use B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB or PiB)");
  if (mult == 1 && frac != 0) return fail(error, "a byte count is a whole number");
  if (whole > kMax / mult) return fail(error, "too large (at most 2^64-1 bytes)");
  u128 bytes = whole * mult;
  // frac / frac_scale * mult, rounded down; frac < 10^19 < 2^64 and mult <= 2^50 fit in 128 bits.
  if (frac != 0) bytes += frac * mult / frac_scale;
  if (bytes > kMax) return fail(error, "too large (at most 2^64-1 bytes)");
  return static_cast<uint64_t>(bytes);
}

}  // namespace edo::model
