// Whether the program `edo record` starts can load libedo_trace.so at all: the tracer is a 64-bit
// library, and a 32-bit program's loader refuses it ("wrong ELF class: ELFCLASS64", on the job's
// stderr) and runs the job untraced (issue 30 §11). Said in one clear line before the job starts,
// and again at the end instead of "statically linked, LD_PRELOAD cleared".
#pragma once

#include <string>

namespace edo::cli {

enum class ElfClass { kNotElf, kElf32, kElf64 };

// The ELF class of the file at `path` (its first 5 bytes); kNotElf for scripts, other formats and
// files that cannot be read.
ElfClass elf_class_of(const std::string& path);

// The program that actually runs for `exe`: itself, or for a script ("#!INTERPRETER ...") its
// interpreter (one level, as the kernel does). A 32-bit one of these gets one line from
// `edo record`: what is returned names it, "" when it is not 32-bit.
std::string thirty_two_bit_program(const std::string& exe);

}  // namespace edo::cli
