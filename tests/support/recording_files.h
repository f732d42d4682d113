// The recordings CLI tests read from disk: one `edo synth` recording made once per process, and
// a copy of it for each test that writes to its file (tune runs, plans), so that tests never
// share results. In-memory recordings: recordings.h. Needs run_command.cpp in the test target
// (tests/integration/cli: run_command.h, temp_dir.h).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_command.h"
#include "temp_dir.h"

namespace edo::testing {

// The recording `edo synth -o PATH ARGS` writes, made on the first call for PATH.
inline const std::string& synth_once(const std::string& edo, const std::string& path, const std::string& args) {
  return made_once("synth " + path, [&] {
    const CommandResult r = run_command(edo + " synth -o " + path + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  });
}

// A copy of `recording` at DIR/NAME (replacing an earlier one); its path.
inline std::string copy_recording(const std::string& recording, const std::string& dir, const std::string& name) {
  const std::string p = dir + "/" + name;
  std::filesystem::copy_file(recording, p, std::filesystem::copy_options::overwrite_existing);
  return p;
}

}  // namespace edo::testing
