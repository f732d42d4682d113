#include "modelled.h"

#include <algorithm>

#include "edo/tuner/device_model.h"

namespace edo::tuner {

Measurement model_candidate(const TableBench& b, const TableGroup& g, const Candidate& c, const DeviceProfile& d,
                            const TuneOptions& o) {
  Measurement out;
  out.measured_rows = g.rows;  // the model is of the whole table
  out.error = lossless(c.strategy, c.baseline) ? 0.0 : b.full_error(c, o);
  double hit = 0;
  if (c.strategy == "offload") {
    // The held-out rate (fitted on the earlier part of the recorded order, replayed on the rest)
    // is what the cache will see; the recorded curve's rate is fitted to the stream it scores.
    if (c.heldout_hit_rate) {
      hit = *c.heldout_hit_rate;
    } else if (c.recorded_hit_rate) {
      hit = *c.recorded_hit_rate;
    } else if (c.params.policy == "lru") {
      hit = b.lru_hit_rate(std::min<uint64_t>(b.rows(), c.cache_rows), o.seed);
    }
    out.hit_rate = hit;
  }
  const LookupTraffic t = lookup_traffic(c.kernel, g.dim, hit, d.sector_bytes);
  out.step_us = modelled_step_us(t, g.lookups_per_step, d);
  // A model has no spread: equal traffic is an exact tie (fp16 and bf16), broken by loss.
  out.step_us_lo = out.step_us_hi = out.step_us;
  out.note = "modelled for " + d.name + ": " + t.basis;
  return out;
}

}  // namespace edo::tuner
