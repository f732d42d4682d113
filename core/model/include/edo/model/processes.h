// How the processes (sessions) of one recording relate to each other: which one is the job
// `edo record` started (its root), which are the ranks of a distributed job, which are forked
// workers (DataLoader, multiprocessing fork), and which tables a forked worker merely
// inherited from the process it was forked from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"

namespace edo::model {

// Metadata keys `edo record` writes about the job it started (it knows the pid it forked, its
// exit status and its wall time; the tracer in the job does not).
inline constexpr const char* kJobRootPid = "job.root_pid";
inline constexpr const char* kJobDurationNs = "job.duration_ns";
inline constexpr const char* kJobCommand = "recorded_command";
// A merged recording (`edo merge`) has one root per input recording (each node's launcher):
// the note "session.<id>.job.root" = "1" marks each (session notes follow their session through
// later merges).
inline constexpr const char* kRootNote = "job.root";

enum class Role {
  kRoot,    // the job's own process (every image of it, when it exec'ed)
  kRank,    // the first process of one RANK, when the job has ranks
  kWorker,  // forked from another recorded process (same command line)
  kChild,   // any other process the job started (exec'ed children, launchers' children)
};
const char* role_name(Role r);  // "root", "rank", "worker", "child"

struct JobView {
  std::string command;                   // what was run
  std::optional<int64_t> pid;            // the root pid, when known
  std::optional<int> exit_code;          // the job's exit code (128+signal when killed)
  int64_t start_unix_ns = 0;
  int64_t duration_ns = 0;
  std::string host;
  uint64_t steps = 0;                    // edo_step() calls of the root, else of its busiest rank
  // Indices into Profile::sessions. `root` is the last image of the root process (-1: it
  // never reported); `ranks` one per distinct RANK, ordered by rank (a root with a RANK is one
  // too, its role staying kRoot: a rank traced on its own); `roles` one per session.
  int64_t root = -1;
  std::vector<size_t> ranks;
  std::vector<Role> roles;
  size_t count(Role r) const;
};

// The root is the session of metadata job.root_pid (written by `edo record`); without it, the
// earliest session whose parent is not itself recorded. In a merged recording, every session
// with a kRootNote is a root (JobView::root: the earliest of them; exit_code: the first
// non-zero of theirs, else 0; duration: from the earliest start to the latest end).
JobView job_view(const Profile& profile);

// For every table, the index of the table it is the same memory as: a table that a forked
// process inherited (same name, shape, dtype, device and base address, in processes of one
// fork family -- one forked from the other, or both from a common recorded process, with the
// same command line -- on the same host and rank) points to the first such table; every other
// table to itself. Forked processes share the parent's pages, so such a table is counted once.
// Processes started by exec (spawn, forkserver, subprocess) have their own memory and command
// line: their tables stay apart.
std::vector<size_t> same_table_as(const Profile& profile);

}  // namespace edo::model
