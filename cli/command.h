// How the `edo` command is put together: every cli/cmd_*.cpp file registers one subcommand
// with EDO_REGISTER_COMMAND, so adding a command never touches a shared list.
//
// A command's setup function declares its options on the CLI11 subcommand and returns the
// function that runs it. Runners return the process exit code: 0 success, 1 runtime failure
// (throw edo::cli::Failure or any std::exception: main prints one line on stderr), 2 usage
// error (throw CLI::ValidationError or edo::cli::UsageError).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace edo::cli {

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App& sub)>;

struct CommandInfo {
  std::string name;
  std::string description;  // one line, shown by `edo --help`
  int order;                // position in `edo --help` (workflow order)
  Setup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string description, int order, Setup setup) {
    command_registry().push_back({std::move(name), std::move(description), order, std::move(setup)});
  }
};

// A runtime failure: main prints "edo <command>: <message>" and exits 1.
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A usage error found after parsing (conflicting options...): exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace edo::cli

#define EDO_CLI_CONCAT2(a, b) a##b
#define EDO_CLI_CONCAT(a, b) EDO_CLI_CONCAT2(a, b)
#define EDO_REGISTER_COMMAND(name, description, order, setup)                       \
  static const ::edo::cli::CommandRegistrar EDO_CLI_CONCAT(edo_command_registrar_, \
                                                           __COUNTER__){name, description, order, setup}
