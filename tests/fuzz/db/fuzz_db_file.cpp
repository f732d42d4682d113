// Fuzz target: arbitrary bytes as an .edodb file, read the way `edo report` reads it.
#include <cstddef>
#include <cstdint>
#include <fstream>

#include "read_side.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = edo::fuzz::scratch_dir() + "/input.edodb";
  edo::fuzz::remove_database(path);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  edo::fuzz::read_side(path);
  return 0;
}
