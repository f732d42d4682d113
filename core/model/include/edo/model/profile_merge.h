// `edo merge`: one recording of a job from the recordings of its parts (one per node, or per
// group of ranks). See docs/multi-node.md for what the merged file means.
//
//  * Every process stays its own session (a rank is never folded into another): the report,
//    the tuner and the dashboard add the ranks' counts up exactly (TableAggregate::merge: exact
//    counts added, count-min sketches added, HyperLogLog registers united, stack-distance
//    histograms added) when they read the file, and can still show each rank apart.
//  * Drop counters stay per session, so the job's totals are their sums.
//  * The result is canonical: sessions sorted by (host, start, pid, command, ...) and numbered
//    from 1, everything else in that order. Merging in any grouping ((A+B)+C, A+(B+C), C+B+A)
//    gives the same profile, and so the same database.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "edo/model/profile.h"

namespace edo::model {

// A refused merge: one line naming the files and the way out (--force).
class MergeRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ClockAlign {
  kWall,   // each host's wall clock as recorded (off by the hosts' clock offset: NTP keeps it to ~1 ms)
  kStart,  // each host's first process is moved to the job's earliest start (off by the launch skew)
};

struct MergeOptions {
  bool force = false;  // merge recordings of different (or unknown) jobs and the same rank twice
  ClockAlign align = ClockAlign::kWall;
};

struct LabeledProfile {
  std::string label;  // the file it came from (named in errors)
  Profile profile;
};

// What a merge found, for the user.
struct MergeSummary {
  std::string job;                  // job_key() of the job ("" when unknown)
  size_t sessions = 0;
  std::vector<int64_t> ranks;       // distinct ranks, ascending
  std::vector<std::string> hosts;   // distinct hosts, ascending
  // The hosts' first process starts (after alignment): the latest minus the earliest.
  int64_t host_start_spread_ns = 0;
  std::vector<std::string> warnings;  // what --force let through
};

// Checks that the inputs are parts of one job with no rank recorded twice (throws
// MergeRefused otherwise, unless options.force), then merges them. Inputs are consumed.
Profile merge_profiles(std::vector<LabeledProfile>& inputs, const MergeOptions& options, MergeSummary* summary = nullptr);

}  // namespace edo::model
