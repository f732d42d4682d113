// The backend-neutral description of a memory-saving strategy and of a table encoded with one
// (edo_kernels_core). Encoding happens on the host (edo/kernels/encode.h); every backend takes
// an EncodedTable: the CPU backend answers lookups on it directly, the CUDA backend uploads its
// FormatData (edo/kernels/cuda.h).
//
// Conventions (every backend):
//   * indices are int64 row ids; any id outside [0, rows) makes the call throw
//     IndexOutOfRange naming the id, its position and the table size (nothing is read).
//   * bags use CSR offsets: offsets has n_bags + 1 entries, offsets[0] == 0,
//     non-decreasing, offsets[n_bags] == n_indices; bag b pools indices
//     [offsets[b], offsets[b+1]). An empty bag yields zeros (sum and mean).
//   * per_sample_weights (nullable) has one weight per index: sum pools w_i * x_i;
//     mean divides that by the bag's length.
//   * outputs are row-major float32, n x dim (gather) or n_bags x dim (bag).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/dtype.h"
#include "edo/kernels/formats/common.h"
#include "edo/kernels/training.h"

namespace edo::kernels {

class IndexOutOfRange : public std::out_of_range {
 public:
  IndexOutOfRange(std::int64_t index, std::int64_t position, std::uint64_t rows);
  std::int64_t index, position;
  std::uint64_t rows;
};

// "name" or "name:key=value:key=value", e.g. "pq:m=16", "offload:cache=0.1:policy=lru".
struct StrategySpec {
  std::string name;
  std::map<std::string, std::string> params;
  static StrategySpec parse(const std::string& text);      // throws std::invalid_argument
  static std::vector<StrategySpec> parse_list(const std::string& comma_separated);
  std::string to_string() const;
};

// Every strategy this build knows, in the default benchmark order.
const std::vector<std::string>& strategy_names();
// The default list for `edo bench` (all strategies, LRU and static offload both).
std::string default_strategy_list();

// Which family of kernels a table needs; the backends switch on it. The first six are the
// row formats, in RowKind's order (edo/kernels/formats/row_formats.h).
enum class FormatKind { F32, F16, BF16, FP8, INT8, INT4, PQ, MultiHash, QR, LowRank, Pruned, Offload };

// The strategy that stores a table in its own element type (the baseline a tuner compares
// against): fp32 -> "fp32", fp16 -> "fp16", bf16 -> "bf16", fp8_e4m3 -> "fp8"; nullopt for
// integer dtypes (already quantised by the user: no lossless strategy here).
std::optional<std::string> strategy_of_dtype(DType t);
// The element type a strategy's rows are stored in (edo/dtype.h's vocabulary): fp32, fp16,
// bf16 for those; fp8_e4m3 for fp8; uint8 codes for int8, int4 (packed) and PQ; fp32 for the
// factorised and offloaded formats.
DType storage_dtype(FormatKind k);

// Raw description of an encoded table for another backend: named host arrays plus scalars.
struct FormatData {
  FormatKind kind;
  std::uint64_t rows = 0;
  std::uint32_t dim = 0;
  std::uint64_t row_bytes = 0;  // row formats
  struct Array {
    std::string name;
    const void* data;
    std::uint64_t bytes;
  };
  std::vector<Array> arrays;            // e.g. {"rows", ...}, {"codes", ...}, {"codebook", ...}
  std::map<std::string, double> scalars;  // e.g. m, dsub, k, buckets, seed, rank, table_scale
  const Array& array(const std::string& name) const;
  double scalar(const std::string& name) const;
};

class EncodedTable {
 public:
  virtual ~EncodedTable() = default;

  const std::string& strategy() const { return name_; }
  const nlohmann::json& params() const { return params_; }  // every parameter, defaults resolved
  std::uint64_t rows() const { return rows_; }
  std::uint32_t dim() const { return dim_; }

  // Exact bytes in accelerator memory (metadata included) and in host memory.
  virtual std::uint64_t device_bytes() const = 0;
  virtual std::uint64_t host_bytes() const { return 0; }
  // Bytes of table memory one lookup of one row reads (row bytes for row formats).
  virtual double bytes_read_per_row() const = 0;
  // Hash, QR and pruning change the model: it must be (re)trained with the format.
  virtual bool needs_retraining() const { return false; }

  // Lookups on the CPU backend (the host copy of the table).
  // out[i] = row idx[i], n x dim.
  void gather(const std::int64_t* idx, std::int64_t n, float* out) const;
  // out[b] = pooled bag b, n_bags x dim.
  void bag(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
           const float* per_sample_weights, Pooling mode, float* out) const;
  // Decode rows [first, first+count) densely to fp32 (the reference every backend is checked
  // against, and what the error is computed from).
  virtual void decode_rows(std::uint64_t first, std::uint64_t count, float* out) const = 0;

  // Training: for the gradient grad_out (n_bags x dim) of the bag above, apply
  // W[row] -= lr * dL/dW[row] (scatter-add of row gradients, duplicates summed in fp32 first,
  // one rounding per row for fp16/bf16). Only fp32, fp16, bf16.
  virtual bool has_backward() const { return false; }
  void backward(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                const float* per_sample_weights, Pooling mode, const float* grad_out, float lr);
  // The two halves of backward() (edo/kernels/training.h): the row gradients of the bag above
  // (any format: they do not depend on how the rows are stored), and W[rows[i]] -= updates[i]
  // (an optimizer's step, one rounding per row for fp16/bf16; only where has_backward()).
  void row_gradients(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                     const float* per_sample_weights, Pooling mode, const float* grad_out, RowGradients& out) const;
  void apply_row_updates(const std::int64_t* rows, const float* updates, std::int64_t count);

  // Offload: hit rate of the device cache since the last reset (-1 for other formats). The
  // counters are statistics of lookups, which are const: resetting them is too.
  virtual double hit_rate() const { return -1.0; }
  virtual void reset_stats() const {}

  virtual FormatData format_data() const = 0;

 protected:
  EncodedTable(std::string name, std::uint64_t rows, std::uint32_t dim) : name_(std::move(name)), rows_(rows), dim_(dim) {}
  // offsets == nullptr: gather (bag i = index i, weights and mode ignored). Indices are
  // already validated.
  virtual void lookup(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                      const float* psw, Pooling mode, float* out) const = 0;
  virtual void apply_row_gradients(const std::int64_t* rows, const float* grads, std::int64_t count, float lr);
  nlohmann::json params_ = nlohmann::json::object();

 private:
  std::string name_;
  std::uint64_t rows_;
  std::uint32_t dim_;
};

// Access-frequency-weighted relative L2 reconstruction error:
//   sqrt( sum_r c_r ||w_r - decode(r)||^2 / sum_r c_r ||w_r||^2 ), c_r = counts[r] (1 if null).
double reconstruction_error(const EncodedTable& table, const float* weights, const std::uint64_t* counts);

// Validates indices and offsets (throws IndexOutOfRange / std::invalid_argument).
void check_indices(const std::int64_t* idx, std::int64_t n, std::uint64_t rows);
void check_offsets(const std::int64_t* offsets, std::int64_t n_bags, std::int64_t n);

// Threads of the host-side work (CPU lookups, encoders, error); default: OpenMP's maximum.
void set_num_threads(int n);
int num_threads();

}  // namespace edo::kernels
