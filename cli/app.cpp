// EdoApp: see app.h.
#include "app.h"

#include <algorithm>
#include <string>

#include "support/help_format.h"
#include "version.h"

namespace edo::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

EdoApp::EdoApp()
    : app("edo: measure how much memory each embedding table takes and how often each row is read,\n"
          "benchmark memory-saving strategies on this machine, and recommend a plan under a memory budget.\n\n"
          "Typical workflow:\n"
          "  edo record -o run.edodb -- python3 train.py   attach to an unmodified job\n"
          "  edo report run.edodb                          terminal summary (--json for machines)\n"
          "  edo tune run.edodb --budget 24GiB             measure every strategy per table, recommend a plan\n"
          "  edo export run.edodb --format torchrec        the plan as JSON, YAML or TorchRec constraints\n"
          "  edo synth -o demo.edodb --zipf 1.05           a synthetic profile to try things on\n"
          "  edo diff before.edodb after.edodb             what changed between two runs\n"
          "  edo dashboard run.edodb                       the Qt desktop dashboard\n",
          "edo") {
  app.set_version_flag("--version", std::string("edo ") + EDO_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands: they copy it
  auto registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const CommandInfo& a, const CommandInfo& b) { return a.order < b.order; });
  for (auto& info : registry) {
    CLI::App* sub = app.add_subcommand(info.name, info.description);
    runners.emplace_back(sub, info.setup(*sub));
  }
}

Runner EdoApp::selected(std::string* name) const {
  for (const auto& [sub, run] : runners) {
    if (sub->parsed()) {
      if (name) *name = sub->get_name();
      return run;
    }
  }
  return {};
}

}  // namespace edo::cli
