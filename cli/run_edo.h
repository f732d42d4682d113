// `edo` itself: parses argv, runs the selected command and returns the process's exit code;
// every error is one line on stderr (command.h says which code is which). Free of CLI11, so
// that main.cpp compiles in a moment.
#pragma once

namespace edo::cli {

int run_edo(int argc, char** argv);

}  // namespace edo::cli
