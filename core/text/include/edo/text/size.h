// Byte sizes as users write them on the command line: "24GiB", "500MB", "1.5TiB", "4096".
#pragma once

#include <cstdint>
#include <string>

namespace edo {

// Parses a size: a non-negative number with an optional unit, no space or one space between:
// B, KB/MB/GB/TB/PB/EB (powers of 1000), KiB/MiB/GiB/TiB/PiB/EiB (powers of 1024); units are
// case-insensitive except that "b" alone is not accepted (bits are not bytes). Fractions are
// allowed with a unit ("1.5TiB") and rounded down to whole bytes. Throws std::invalid_argument
// with a one-line message naming the text and the accepted forms.
uint64_t parse_size(const std::string& text);

}  // namespace edo
