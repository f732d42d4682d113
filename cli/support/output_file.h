// Where `edo record`, `edo import` and `edo synth` may write their .edodb, and `edo export` its
// plan file. A new output never replaces a file by surprise: an existing output is refused
// unless --force, and a file of another kind (a script passed to -o by mistake) is never
// replaced.
#pragma once

#include <functional>
#include <string>

namespace edo::cli {

// Throws Failure (exit 1) with one line naming the file and the fix when `path` must not be
// written: it exists and `force` is false; it is a directory or a special file; it is a file
// other than an edo database (or an empty one), whatever `force` says. A symbolic link at
// `path` is replaced by the new file (with --force), never followed.
void check_output_path(const std::string& path, bool force);

// The same rule for another kind of output: `what` names it in messages ("an edo database",
// "a JSON edo plan"), `is_ours` says whether an existing non-empty regular file is one (only
// such a file may be replaced, and only with --force), `example` is a file name to suggest
// when `path` is a directory.
struct OutputKind {
  std::string what;
  std::function<bool(const std::string& path)> is_ours;
  std::string example;
};
void check_output_path(const std::string& path, bool force, const OutputKind& kind);

// `stem` + ".edodb" when no such file exists, else stem + ".2.edodb", ".3.edodb", ...: a
// default output name never lands on an existing file.
std::string unused_output_name(const std::string& stem);

}  // namespace edo::cli
