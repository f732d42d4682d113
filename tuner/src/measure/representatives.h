// Representative measuring (issue 19 point 8, docs/tuning.md "Representatives"): a recording of
// a thousand tables cannot have every candidate of every table timed within a time limit, and
// need not: what a lookup costs depends on the table's shape and access pattern, not on its
// name. Tables are grouped into timing classes; one representative per class is measured and
// every other member's times are predicted from it (per-lookup time x the member's lookups
// per step). Bytes are never predicted (candidates.cpp computes them per table); errors are
// each table's own when it has recorded weights.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "candidates.h"
#include "edo/model/tune.h"
#include "workload.h"

namespace edo::tuner {

// What a group's measured times depend on exactly: shape, dtype, training state, lookups per
// step and the multiset of its per-row counts (which rows the counts fall on does not change a
// time: the index batches are drawn from the counts). Equal keys: equal times up to noise.
std::string timing_key(const TableGroup& g);

// The group's timing class: what a per-lookup time depends on, coarsely. dtype and dim
// exactly (bytes per row read); the rows in factor-4 buckets (which cache level the table
// and its hot set fit: 1024 rows, where hashing candidates start, is a boundary); lookups per
// step in factor-4 buckets (the recording has no bag sizes: a step's lookups are the batch a
// pass times, and small batches cost more per lookup); the LRU curve's shape (its hit rate at
// 1 % and 10 % of the rows, in quarters: how skewed the accesses are, which decides what the
// caches of the machine and of an offload keep); and what changes the candidates themselves
// (training state and optimizer, tied and identical members, exact or sketched counts, rows
// never read).
std::string class_key(const TableGroup& g);

struct TimingClasses {
  // Per group: the group whose measurements it takes (its class's representative), or -1
  // when it is measured itself (a representative, or a group not tuned).
  std::vector<int> source;
  // Per group: its timing_key equals its source's (a twin: timed as it, exactly).
  std::vector<char> twin;
  size_t classes = 0;  // tuned classes: the tables measured
};

// Groups the tuned groups by class_key (`representatives` true) or by timing_key alone (false:
// only identical tables share a measurement). Each class's representative is its median
// member by rows (of several with the median's rows, the first in workload order); a class of
// one is its own.
TimingClasses timing_classes(const Workload& w, bool representatives);

// The representative's candidate that stands for candidate `c` of a member: same strategy
// and optimizer, the same ordinal among them (multi-hash's buckets are a fraction of each
// table's rows: the first stands for the first); for offload, the same policy and the nearest
// recorded hit rate (cache sizes come from each table's own curve). -1: none.
int matching_candidate(const std::vector<Candidate>& rep, const std::vector<Candidate>& own, size_t ci);

// Fills `m` (member candidate) with the time of `src`, the representative's matching
// candidate, measured on the group named `from`: a twin's exactly ("twin"), otherwise scaled
// by the member's lookups per step over the representative's ("predicted"). An offload's
// cost over the baseline is its misses': a predicted offload is the representative's
// baseline per lookup plus its offload's extra per lookup times the ratio of the recorded
// miss rates (`base`: the representative's measured baseline). The error is left to the
// caller.
void borrow_timing(model::TuneCandidate& m, const model::TuneCandidate& src, const model::TuneCandidate& base,
                   double lookups, double src_lookups, const std::string& from, bool twin);

}  // namespace edo::tuner
