// Where `edo record`, `edo import` and `edo synth` may write their .edodb. A new recording
// never replaces a file by surprise: an existing output is refused unless --force, and a
// file that is not an edo database (a script passed to -o by mistake) is never replaced.
#pragma once

#include <string>

namespace edo::cli {

// Throws Failure (exit 1) with one line naming the file and the fix when `path` must not be
// written: it exists and `force` is false; it is a directory or a special file; it is a file
// other than an edo database (or an empty one), whatever `force` says. A symbolic link at
// `path` is replaced by the new file (with --force), never followed.
void check_output_path(const std::string& path, bool force);

// `stem` + ".edodb" when no such file exists, else stem + ".2.edodb", ".3.edodb", ...: a
// default output name never lands on an existing file.
std::string unused_output_name(const std::string& stem);

}  // namespace edo::cli
