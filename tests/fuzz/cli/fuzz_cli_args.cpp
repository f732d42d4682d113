// Fuzz target: the input split at '\0' bytes is the argument list of `edo ...`, parsed by the
// same CLI11 app `edo` builds (cli/app.h): every subcommand, option, flag and value check.
// Nothing is run. A parse ends in a selected command, or in CLI11's help/version/usage error
// (the one-line message and exit 2 that main() gives). Any other exception would reach the user
// as a runtime failure (exit 1) with whatever text it carries: a finding, like a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (args.size() < 64 && !cur.empty()) args.push_back(cur);

  edo::cli::EdoApp edo;
  std::vector<const char*> argv{"edo"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    edo.app.parse(static_cast<int>(argv.size()), argv.data());
    (void)edo.selected();
  } catch (const CLI::ParseError&) {
    // help, version, or a usage error: main() prints it in one line and exits 2
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_cli_args: parsing threw %s\n", e.what());
    std::abort();
  }
  return 0;
}
