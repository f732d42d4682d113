// See elf_class.h.
#include "support/elf_class.h"

#include <elf.h>

#include <fstream>

namespace edo::cli {

ElfClass elf_class_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char ident[EI_CLASS + 1] = {};
  if (!in.read(reinterpret_cast<char*>(ident), sizeof ident)) return ElfClass::kNotElf;
  if (ident[EI_MAG0] != ELFMAG0 || ident[EI_MAG1] != ELFMAG1 || ident[EI_MAG2] != ELFMAG2 || ident[EI_MAG3] != ELFMAG3)
    return ElfClass::kNotElf;
  if (ident[EI_CLASS] == ELFCLASS32) return ElfClass::kElf32;
  if (ident[EI_CLASS] == ELFCLASS64) return ElfClass::kElf64;
  return ElfClass::kNotElf;
}

std::string thirty_two_bit_program(const std::string& exe) {
  if (elf_class_of(exe) == ElfClass::kElf32) return exe;
  // A script: the kernel runs its interpreter, which is what loads (or refuses) the tracer.
  std::ifstream in(exe, std::ios::binary);
  std::string line;
  if (!std::getline(in, line) || line.rfind("#!", 0) != 0) return "";
  const size_t start = line.find_first_not_of(" \t", 2);
  if (start == std::string::npos) return "";
  const std::string interpreter = line.substr(start, line.find_first_of(" \t\r", start) - start);
  return elf_class_of(interpreter) == ElfClass::kElf32 ? interpreter : "";
}

}  // namespace edo::cli
