// `edo dashboard FILE`: opens a recording in the Qt dashboard, the edo-dashboard executable
// installed next to this `edo` (built when Qt 6 is found; see EDO_GUI).
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "command.h"
#include "support/trace_library.h"
#include "edo/db/profile_store.h"

namespace edo::cli::dashboard_command {
namespace {

struct DashboardOptions {
  std::string file;
  std::string compare;
  std::string screenshot;
  std::string view;
  std::string size;
};

std::string dashboard_path() { return executable_dir() + "/edo-dashboard"; }

int run_dashboard(const DashboardOptions& o) {
  // Say what is wrong with the file here, in the terminal, rather than in a dialog.
  { db::ProfileStore check(o.file, db::ProfileStore::Mode::kReadOnly); }
  if (!o.compare.empty()) { db::ProfileStore check(o.compare, db::ProfileStore::Mode::kReadOnly); }
  if ((!o.view.empty() || !o.size.empty()) && o.screenshot.empty()) throw UsageError("--view and --size go with --screenshot");

  const std::string exe = dashboard_path();
  struct stat st;
  if (stat(exe.c_str(), &st) != 0 || !(st.st_mode & S_IXUSR)) {
    throw Failure("the dashboard is not part of this build (no " + exe +
                  "); install Qt 6 (scripts/install-deps.sh) and rebuild (cmake -DEDO_GUI=ON), or use 'edo report'");
  }
  std::vector<std::string> args = {exe, o.file};
  if (!o.compare.empty()) args.insert(args.end(), {"--compare", o.compare});
  if (!o.screenshot.empty()) args.insert(args.end(), {"--screenshot", o.screenshot});
  if (!o.view.empty()) args.insert(args.end(), {"--view", o.view});
  if (!o.size.empty()) args.insert(args.end(), {"--size", o.size});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(exe.c_str(), argv.data());
  throw Failure("cannot start " + exe + ": " + std::strerror(errno));
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<DashboardOptions>();
  sub.footer(
      "Opens the recording in edo-dashboard (Qt 6): overview with the memory timeline, tables, per-table\n"
      "skew and cache curves, kernels and NVTX ranges, and a diff with a second recording.\n"
      "Without a display, --screenshot renders one view to a PNG instead.\n\n"
      "Examples:\n  edo dashboard run.edodb\n  edo dashboard after.edodb --compare before.edodb\n"
      "  edo dashboard run.edodb --screenshot tables.png --view tables");
  sub.add_option("file", o->file, "an .edodb file from 'edo record', 'edo import' or 'edo synth'")->required();
  sub.add_option("--compare", o->compare, "a second recording to show in the Diff view, as the recording before (FILE is after)");
  sub.add_option("--screenshot", o->screenshot, "render one view to this PNG without a display, then exit");
  sub.add_option("--view", o->view, "with --screenshot: overview, tables, table:NAME, kernels, tuner or diff:OTHER");
  sub.add_option("--size", o->size, "with --screenshot: window size WxH (default 1280x800)");
  return [o] { return run_dashboard(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("dashboard", "open a recording in the Qt desktop dashboard (edo-dashboard)", 70, setup);

}  // namespace edo::cli::dashboard_command
