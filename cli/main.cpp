// The `edo` command: a thin front end over the analysis core. Each subcommand lives in its
// own cli/cmd_*.cpp file and registers itself (see command.h).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "command.h"
#include "version.h"

namespace edo::cli {
std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}
}  // namespace edo::cli

int main(int argc, char** argv) {
  using namespace edo::cli;
  CLI::App app{
      "edo: measure how much memory each embedding table takes and how often each row is read,\n"
      "benchmark memory-saving strategies on this machine, and recommend a plan.\n\n"
      "Typical workflow:\n"
      "  edo record -o run.edodb -- python3 train.py   attach to an unmodified job\n"
      "  edo report run.edodb                          terminal summary (--json for machines)\n"
      "  edo synth -o demo.edodb --zipf 1.05           a synthetic profile to try things on\n"
      "  edo diff before.edodb after.edodb             what changed between two runs\n",
      "edo"};
  app.set_version_flag("--version", std::string("edo ") + EDO_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandInfo& a, const CommandInfo& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (auto& info : registry) {
    CLI::App* sub = app.add_subcommand(info.name, info.description);
    runners.emplace_back(sub, info.setup(*sub));
  }

  std::string active = "edo";
  try {
    app.parse(argc, argv);
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) {
        active = "edo " + sub->get_name();
        return run();
      }
    }
    return 2;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem, then where to look.
    std::string what = e.what();
    std::fprintf(stderr, "%s: %s (see '%s --help')\n", active.c_str(), what.c_str(), active.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s (see '%s --help')\n", active.c_str(), e.what(), active.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", active.c_str(), e.what());
    return 1;
  }
}
