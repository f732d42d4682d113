// The `edo` command line as a value: every registered subcommand on one CLI11 app. main()
// parses and runs it; the command-line fuzzer (tests/fuzz/cli) parses only.
#pragma once

#include <utility>
#include <vector>

#include "command.h"

namespace edo::cli {

struct EdoApp {
  CLI::App app;
  std::vector<std::pair<CLI::App*, Runner>> runners;  // one per subcommand, in --help order
  EdoApp();
  // The runner of the subcommand that the last parse() selected (empty when none was).
  Runner selected(std::string* name = nullptr) const;
};

}  // namespace edo::cli
