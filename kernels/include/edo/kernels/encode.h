// Encoding fp32 weights with a strategy (on the host; edo_kernels_cpu, whose k-means and
// lookups the encoders use), checking a spec against a shape, and the exact byte size of a
// strategy for a shape without encoding anything.
#pragma once

#include <cstdint>
#include <memory>

#include "edo/kernels/strategy.h"

namespace edo::kernels {

struct EncodeOptions {
  const std::uint64_t* counts = nullptr;  // per-row access counts (nullable: uniform)
  std::uint64_t seed = 42;                // k-means, hashing
  // Only check the spec's parameters against the shape (what encode() would throw for them)
  // and return nullptr: no weights read, nothing allocated. See check_spec().
  bool check_only = false;
};

// Encode fp32 weights (rows x dim, row-major) with a strategy. Throws std::invalid_argument
// for an unknown strategy or a bad parameter (naming it).
std::unique_ptr<EncodedTable> encode(const StrategySpec& spec, const float* weights, std::uint64_t rows,
                                     std::uint32_t dim, const EncodeOptions& options = {});

// Throws std::invalid_argument, as encode() would, when the spec's parameters do not fit a
// rows x dim table; cheap (nothing is encoded), so callers check every spec before long work.
void check_spec(const StrategySpec& spec, std::uint64_t rows, std::uint32_t dim);

// The exact memory of a strategy for a shape, as the encoded table would report it
// (device_bytes(), host_bytes(), bytes_read_per_row()), computed from the parameters alone.
// `counts` matters only for pruned (rows never read are dropped); null counts: every row is
// kept. Throws std::invalid_argument like check_spec().
struct StrategySize {
  std::uint64_t device_bytes = 0, host_bytes = 0;
  double bytes_per_row = 0;
};
StrategySize strategy_size(const StrategySpec& spec, std::uint64_t rows, std::uint32_t dim, const std::uint64_t* counts = nullptr);

}  // namespace edo::kernels
