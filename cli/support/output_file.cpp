#include "support/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "command.h"
#include "edo/db/profile_store.h"

namespace edo::cli {

void check_output_path(const std::string& path, bool force) {
  check_output_path(path, force, OutputKind{"an edo database", [](const std::string& p) { return db::is_edo_database(p); }, "run.edodb"});
}

void check_output_path(const std::string& path, bool force, const OutputKind& kind) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // a new file: whether it can be created is the store's check
    throw Failure("cannot use " + path + " as output: " + std::strerror(errno) + "; choose another -o path");
  }
  if (S_ISDIR(st.st_mode)) throw Failure(path + " is a directory; give -o a file name, e.g. " + path + "/" + kind.example);
  if (S_ISLNK(st.st_mode)) {
    if (!force)
      throw Failure(path + " already exists (a symbolic link); choose another -o path, or add --force to replace the "
                    "link itself (its target is left alone)");
    return;
  }
  if (!S_ISREG(st.st_mode)) throw Failure(path + " exists and is not a regular file; choose another -o path");
  const bool ours = st.st_size == 0 || kind.is_ours(path);
  if (!ours)
    throw Failure(path + " exists and is not " + kind.what + "; edo never replaces other files, even with --force: "
                  "choose another -o path");
  if (!force) throw Failure(path + " already exists; choose another -o path, or add --force to replace it");
}

std::string unused_output_name(const std::string& stem) {
  struct stat st;
  std::string name = stem + ".edodb";
  for (int n = 2; ::lstat(name.c_str(), &st) == 0 || ::lstat((name + "-wal").c_str(), &st) == 0; ++n)
    name = stem + "." + std::to_string(n) + ".edodb";
  return name;
}

}  // namespace edo::cli
