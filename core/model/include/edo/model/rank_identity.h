// Where one traced process sits in a distributed job: the facts a launcher (torchrun, or any
// launcher that sets the same environment variables) gives each rank. The tracer reads them
// at start (profiler/capture tracer_config.cpp), the wire Hello carries them (protocol 3), the
// database keeps them per session (schema v7, session_identity), and `edo merge` uses them to
// tell the recordings of one job from those of another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace edo::model {

struct RankIdentity {
  std::string job_id;                      // TORCHELASTIC_RUN_ID ("" when unset)
  std::string master;                      // "MASTER_ADDR:MASTER_PORT" ("" when either is unset)
  std::optional<int64_t> world_size;       // WORLD_SIZE
  std::optional<int64_t> group_rank;       // GROUP_RANK: the node's index among the job's nodes
  std::optional<int64_t> local_world_size; // LOCAL_WORLD_SIZE: ranks on this node
  // What `edo merge --align start` added to this session's clock (start_unix_ns) to line its
  // host up with the others; 0 when the host's own wall clock is used.
  int64_t clock_shift_ns = 0;

  bool empty() const {
    return job_id.empty() && master.empty() && !world_size && !group_rank && !local_world_size && clock_shift_ns == 0;
  }
  bool operator==(const RankIdentity&) const = default;
};

// The job a process belongs to, as one string: torchrun's run id (its default "none" names no
// job), else the rendezvous endpoint, each with the world size ("id=abc world=4",
// "master=10.0.0.1:29500 world=4"). Empty when the process has neither (not a distributed job).
inline std::string job_key(const RankIdentity& id) {
  std::string key;
  if (!id.job_id.empty() && id.job_id != "none") key = "id=" + id.job_id;
  else if (!id.master.empty()) key = "master=" + id.master;
  else return {};
  if (id.world_size) key += " world=" + std::to_string(*id.world_size);
  return key;
}

}  // namespace edo::model
