// Running and timing lookups on a backend ("cpu" or "cuda") with given index batches: what the
// tuner's lookup_us_per_step and `edo bench` measure. The same calls on every backend:
//
//   auto backend = make_backend("cuda");                       // or "cpu"
//   Workload work = Workload::fixed_bags(zipf_batches(rows, 1.05, seed, 8, 65536), 32);
//   auto loaded = backend->load(*table, work);                 // upload table and batches once
//   LookupTimes t = time_lookups(*loaded, 7, 1);               // medians of 7 passes
//
// A pass runs every batch of the workload once (gather: every index is one output row; bag:
// the batch's CSR offsets). Nothing is allocated and nothing is copied between host and device
// inside a timed pass; a CUDA pass is timed with events on the table's stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edo/kernels/strategy.h"
#include "edo/kernels/training.h"

namespace edo::kernels {

// Index batches with their bag offsets (CSR, one offsets vector per batch).
struct Workload {
  std::vector<std::vector<std::int64_t>> batches;
  std::vector<std::vector<std::int64_t>> offsets;  // offsets[i]: n_bags_i + 1 entries
  // Bags of `pooling` indices; each batch is cut to a whole number of bags.
  static Workload fixed_bags(std::vector<std::vector<std::int64_t>> batches, std::uint32_t pooling);
  std::uint64_t indices() const;  // over all batches
  std::uint64_t bags() const;
  std::uint64_t max_batch() const;
  // Throws std::invalid_argument for empty batches or inconsistent offsets.
  void check() const;
};

// A table loaded on a backend together with a workload.
class LoadedTable {
 public:
  virtual ~LoadedTable() = default;
  // One pass over every batch (bag: pooled with the batch's offsets, sum; gather: one output
  // row per index); returns its elapsed seconds. Throws IndexOutOfRange for a bad id.
  virtual double pass(bool bag) = 0;
  // Offload: hit rate of the cache over the passes since reset_stats() (-1 for other formats).
  virtual double hit_rate() const { return -1.0; }
  virtual void reset_stats() {}
  // Indices one pass reads (over every batch).
  std::uint64_t indices() const { return indices_; }

 protected:
  explicit LoadedTable(std::uint64_t indices) : indices_(indices) {}

 private:
  std::uint64_t indices_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu" | "cuda"
  virtual std::string description() const = 0;  // the CPU kernels' instruction set, the GPU's name...
  // Prepares `table` and the workload's batches on this backend (CUDA: uploads both; the
  // output buffer is allocated here, once). The table and the workload must outlive the result.
  virtual std::unique_ptr<LoadedTable> load(const EncodedTable& table, const Workload& work) = 0;
  // Prepares `table` for training steps on the workload's batches (edo/kernels/training.h);
  // the passes change its weights. nullptr when this backend cannot train the table: the CPU
  // trains fp32, fp16 and bf16 rows; the CUDA backend has no optimizer kernels yet (the tuner
  // then models the backward and update, and says so).
  virtual std::unique_ptr<TrainingTable> load_training(EncodedTable& table, const Workload& work, const TrainingSpec& spec) {
    (void)table, (void)work, (void)spec;
    return nullptr;
  }
};

// "cpu" or "cuda". Throws std::invalid_argument for another name and std::runtime_error
// "no CUDA device: <why, in words>" when the CUDA backend cannot run on this machine.
std::unique_ptr<Backend> make_backend(const std::string& name);

struct LookupTimes {
  double gather_rows_per_s = 0, bag_rows_per_s = 0;   // medians over the timed passes
  double gather_s_per_pass = 0, bag_s_per_pass = 0;
  double hit_rate = -1;                                // offload, over the timed bag passes
};
// `warmup` untimed passes, then `reps` timed passes of gather and of bag; medians.
LookupTimes time_lookups(LoadedTable& table, int reps, int warmup);

}  // namespace edo::kernels
