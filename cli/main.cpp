// The `edo` command: a thin front end over the analysis core. Each subcommand lives in its
// own cli/cmd_*.cpp file and registers itself (see command.h); app.h puts them together and
// run_edo.cpp runs them.
#include "run_edo.h"

int main(int argc, char** argv) { return edo::cli::run_edo(argc, argv); }
