// The small things of issue 30 §11, as a user meets them:
//   * a switch spelt "yes" is taken (and documented) without a warning; a value that is none of
//     the spellings gets one warning naming the variable and the accepted spellings;
//   * EDO_OUTPUT with a program that records nothing leaves no empty 0-byte trace file behind;
//   * a 32-bit program under `edo record`: one clear line that the tracer is 64-bit only and the
//     job runs untraced (its exit code passed through), never "statically linked".
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace {

using namespace edo_e2e;

size_t lines_with(const std::string& text, const std::string& what) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(what) != std::string::npos;
  return n;
}

std::string setting(const Profile& p, const std::string& name) {
  auto it = p.metadata.find("setting." + name);
  return it == p.metadata.end() ? "(absent)" : it->second;
}

// EDO_ASYNC as a user may spell it: "yes" turns it on, "no" off, silently; "maybe" is named in
// one warning listing the spellings, and the default (on) is used.
TEST(TracerEdges, SwitchSpellingsAreOneDocumentedSet) {
  struct Case {
    const char* value;
    const char* async;
    bool warns;
  };
  for (const Case c : {Case{"yes", "1", false}, Case{"On", "1", false}, Case{"no", "0", false}, Case{"maybe", "1", true}}) {
    SCOPED_TRACE(c.value);
    const std::string db = tmp_path(std::string("async_") + c.value + ".edodb");
    const Result r = run({EDO_BIN, "record", "-o", db, "--", TRACER_JOB, "basic", "0"}, with({std::string("EDO_ASYNC=") + c.value}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(setting(load(db), "EDO_ASYNC"), c.async);
    EXPECT_EQ(lines_with(r.err, "EDO_ASYNC"), c.warns ? 1u : 0u) << r.err;
    if (c.warns) {
      EXPECT_EQ(lines_with(r.err, "ignoring EDO_ASYNC='maybe' (expected 1, true, yes or on to turn it on; 0, false, no or "
                                  "off to turn it off); using the default 1"),
                1u)
          << r.err;
    }
  }
  // And `edo record --help` lists the spellings with the variables.
  const Result help = run({EDO_BIN, "record", "--help"}, with({}));
  EXPECT_NE(help.out.find("1, true, yes or on"), std::string::npos) << help.out;
}

// EDO_OUTPUT, and a program that never registers a table: no trace file is left (it was a 0-byte
// file that `edo import` could only call empty). A program that records leaves its file as before.
TEST(TracerEdges, OutputOfAProgramThatRecordsNothingLeavesNoEmptyFile) {
  const std::string trace = tmp_path("nothing.trace");
  Result r = run({"/bin/sh", "-c", "exit 3"}, with({"EDO_OUTPUT=" + trace, "LD_PRELOAD=" + preload_of(EDO_TRACE_LIB_PATH)}));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_FALSE(fs::exists(trace)) << "a " << fs::file_size(trace) << "-byte file was left";
  EXPECT_EQ(r.err, "");
  const Result imp = run({EDO_BIN, "import", trace, "-o", tmp_path("nothing.edodb")}, with({}));
  EXPECT_EQ(imp.status, 1) << imp.err;
  EXPECT_NE(imp.err.find("no such file"), std::string::npos) << imp.err;

  const std::string kept = tmp_path("basic.trace");
  r = run({TRACER_JOB, "basic", "0"}, with({"EDO_OUTPUT=" + kept, "LD_PRELOAD=" + preload_of(EDO_TRACE_LIB_PATH)}));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(kept));
  EXPECT_GT(fs::file_size(kept), 0u);
  EXPECT_EQ(run({EDO_BIN, "import", kept, "-o", tmp_path("basic.edodb")}, with({})).status, 0);
}

// A 32-bit x86 program, made by hand (no 32-bit toolchain needed): an ELF32 header, one program
// header, and `mov eax,1; mov ebx,3; int 0x80` (exit(3)). 96 bytes.
void write_elf32_exit3(const std::string& path) {
  std::vector<uint8_t> f(96, 0);
  auto u16 = [&](size_t at, uint16_t v) { f[at] = uint8_t(v), f[at + 1] = uint8_t(v >> 8); };
  auto u32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) f[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  const uint32_t base = 0x08048000;
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 1 /* 32-bit */, 1 /* little-endian */, 1 /* version */};
  std::copy(std::begin(ident), std::end(ident), f.begin());
  u16(16, 2);            // e_type: executable
  u16(18, 3);            // e_machine: i386
  u32(20, 1);            // e_version
  u32(24, base + 84);    // e_entry: the code after the headers
  u32(28, 52);           // e_phoff
  u16(40, 52);           // e_ehsize
  u16(42, 32);           // e_phentsize
  u16(44, 1);            // e_phnum
  u32(52, 1);            // p_type: PT_LOAD
  u32(56, 0);            // p_offset
  u32(60, base);         // p_vaddr
  u32(64, base);         // p_paddr
  u32(68, 96);           // p_filesz
  u32(72, 96);           // p_memsz
  u32(76, 5);            // p_flags: read + execute
  u32(80, 0x1000);       // p_align
  const uint8_t code[] = {0xb8, 1, 0, 0, 0, 0xbb, 3, 0, 0, 0, 0xcd, 0x80};
  std::copy(std::begin(code), std::end(code), f.begin() + 84);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(f.data()), std::streamsize(f.size()));
  chmod(path.c_str(), 0755);
}

TEST(TracerEdges, AThirtyTwoBitProgramIsSaidToRunUntraced) {
  const std::string prog = tmp_path("exit3_32bit"), db = tmp_path("32.edodb");
  write_elf32_exit3(prog);
  const Result r = run({EDO_BIN, "record", "-o", db, "--", prog}, with({}));
  // The job ran as without edo: exit(3), or, on a kernel without 32-bit support, the exec error
  // a shell reports too (then nothing ran).
  const bool ran = r.status == 3;
  EXPECT_TRUE(ran || r.status == 126 || r.status == 127) << r.status << "\n" << r.err;
  EXPECT_EQ(lines_with(r.err, "is a 32-bit program and libedo_trace.so is 64-bit only: the job runs untraced"), 2u)
      << r.err;  // before the job, and at the end in place of a guessed cause
  EXPECT_EQ(r.err.find("statically linked"), std::string::npos) << r.err;
  if (ran) {
    EXPECT_EQ(load(db).tables.size(), 0u);
  }
  // A 64-bit program is not taken for one.
  const Result ok = run({EDO_BIN, "record", "-o", tmp_path("64.edodb"), "--", TRACER_JOB, "basic", "0"}, with({}));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err.find("32-bit"), std::string::npos) << ok.err;
}

}  // namespace
