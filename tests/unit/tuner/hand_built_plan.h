// A TuneResult written by hand (replan() measures nothing: every byte and time is as given):
// one tuned table per entry, each with its options, the first its baseline.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "edo/model/tune.h"

namespace edo::tuner::testing {

struct Opt {
  std::string strategy;
  uint64_t bytes;
  double us;
  double error = 0;
  bool retrain = false;
  std::string optimizer = "";
};

struct HandBuiltShape {
  edo::model::Objective objective = edo::model::Objective::kLeastChange;
  uint32_t devices = 1;
  uint64_t rows = 1000;  // every table's
  uint32_t dim = 16;
};

inline model::TuneResult hand_built(const std::vector<std::pair<std::string, std::vector<Opt>>>& tables,
                                    const HandBuiltShape& shape = {}) {
  model::TuneResult r;
  r.backend = "cpu";
  r.device = "test";
  r.weights = "synthetic";
  r.objective = shape.objective;
  r.devices = shape.devices;
  for (const auto& [name, opts] : tables) {
    model::TuneTable t;
    t.name = name;
    t.rows = shape.rows;
    t.dim = shape.dim;
    t.dtype = "fp32";
    t.device_bytes = opts.front().bytes;
    t.lookups_per_step = 100;
    t.weights = "synthetic";
    r.tables.push_back(t);
    for (const Opt& o : opts) {
      model::TuneCandidate c;
      c.table = name;
      c.strategy = o.strategy;
      c.spec = o.strategy;
      c.device_bytes = o.bytes;
      c.step_us = o.us;
      c.error = o.error;
      c.needs_retraining = o.retrain;
      c.optimizer = o.optimizer;
      c.measured = true;
      r.candidates.push_back(c);
    }
  }
  return r;
}

// The candidate the plan chose for `table`, or nullptr when it chose none.
inline const model::TuneCandidate* chosen(const model::TuneResult& r, const std::string& table) {
  for (const auto& ch : r.choices)
    if (ch.table == table && ch.candidate >= 0) return &r.candidates[static_cast<size_t>(ch.candidate)];
  return nullptr;
}

}  // namespace edo::tuner::testing
