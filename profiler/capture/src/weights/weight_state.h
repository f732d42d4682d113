// The state of weight snapshots (weights.cpp), in the two lifetimes of the library's state
// (process.h): what survives a fork and what the child replaces.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "edo/stats/weight_sample.h"

namespace edo::capture {

// In Process, kept across fork() (its mutex is taken across it, lifecycle.cpp): each table's
// running top rows (from the deltas shipped so far) and how many snapshots it has had.
struct WeightHistory {
  std::mutex mu;
  std::map<uint32_t, std::unique_ptr<stats::HotRowTracker>> hot;  // table id -> running top rows
  std::map<uint32_t, uint32_t> seq;                                // table id -> snapshots taken
};

// In Session, replaced with it in a forked child: the encoded snapshot frames waiting for the
// session's next flush (the parent's belong to the parent's session).
struct WeightFrames {
  std::mutex mu;
  std::string frames;
};

}  // namespace edo::capture
