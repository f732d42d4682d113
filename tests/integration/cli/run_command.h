// Runs a command line through /bin/sh and captures stdout, stderr and the exit code.
#pragma once

#include <string>

namespace edo::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& command_line);

}  // namespace edo::testing
