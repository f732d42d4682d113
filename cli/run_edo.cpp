// What `edo` does with its arguments: parse them on the EdoApp, run the selected command, and
// turn every failure into one line on stderr and an exit code (command.h). It lives in the
// edo_cli_app library, beside the commands, so that main.cpp does not parse CLI11 again.
#include "run_edo.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app.h"
#include "support/terminal.h"

namespace edo::cli {
namespace {

// ", did you mean 'report'?" when one command is within two edits of `typed`, else a list.
std::string closest_command(const std::string& typed, const std::vector<std::string>& names) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  for (const auto& n : names)
    if (distance(typed, n) <= 2) return ", did you mean '" + n + "'?";
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return "; the commands are " + all;
}

}  // namespace

int run_edo(int argc, char** argv) {

  EdoApp edo;
  CLI::App& app = edo.app;

  std::string active = "edo";
  if (argc > 1 && argv[1][0] != '-') {
    // CLI11 says "A subcommand is required" for a misspelt one: name it instead.
    std::vector<std::string> names;
    for (auto& [sub, run] : edo.runners) names.push_back(sub->get_name());
    // A parse error inside a command names the command ("edo record: --flush-ms: ...").
    active = "edo " + terminal_safe(argv[1]);
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::fprintf(stderr, "edo: unknown command '%s'%s (see 'edo --help')\n", terminal_safe(argv[1]).c_str(),
                   closest_command(argv[1], names).c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    std::string name;
    if (Runner run = edo.selected(&name)) {
      active = "edo " + name;
      return run();
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
    const std::string what = terminal_safe(e.what());
    std::fprintf(stderr, "%s: %s (see '%s --help')\n", active.c_str(), what.c_str(), active.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s (see '%s --help')\n", active.c_str(), terminal_safe(e.what()).c_str(), active.c_str());
    return 2;
  } catch (const std::exception& e) {
    // Messages can quote the file's content (a table name): escaped, so one line stays one line.
    std::fprintf(stderr, "%s: %s\n", active.c_str(), terminal_safe(e.what()).c_str());
    return 1;
  }
}

}  // namespace edo::cli
