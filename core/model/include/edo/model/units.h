// Byte sizes as users type them on the command line ("24GiB", "500MB", "1.5TiB", "4096").
// One parser for every option that takes a size (edo tune --budget, ...), so they all accept
// and reject the same spellings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edo::model {

// A non-negative decimal number (digits, optionally one '.' and more digits), optionally one
// space, then an optional unit: B, kB/KB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB,
// TiB, PiB (powers of 1024); unit letters are case-insensitive ("gib" = "GiB"). Fractions
// are exact decimal arithmetic, rounded down to a whole byte ("1.5KiB" = 1536). Returns the
// byte count, or nullopt with `error` (when given) saying what is wrong in one phrase:
// empty, a sign, exponents, NaN, an unknown unit, a fraction of a plain byte count, or a
// value above 2^64-1 bytes.
std::optional<uint64_t> parse_size(std::string_view text, std::string* error = nullptr);

}  // namespace edo::model
