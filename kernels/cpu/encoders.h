// Internal: the encoders of each strategy and a parameter reader. Not part of the API.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/strategy.h"

namespace edo::kernels::detail {

// Reads "key=value" parameters with defaults; unknown keys are an error (checked by done()).
class ParamReader {
 public:
  ParamReader(const StrategySpec& spec) : spec_(spec) {}
  double number(const std::string& key, double dflt, double lo, double hi);
  std::int64_t integer(const std::string& key, std::int64_t dflt, std::int64_t lo, std::int64_t hi);
  std::string choice(const std::string& key, const std::string& dflt, const std::set<std::string>& allowed);
  void done() const;

 private:
  const StrategySpec& spec_;
  std::set<std::string> used_;
};

cpu::LookupArgs make_args(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                          const float* psw, Pooling mode, float* out, std::uint32_t dim, double row_bytes);

using Encoder = std::unique_ptr<EncodedTable> (*)(const StrategySpec&, const float*, std::uint64_t, std::uint32_t,
                                                   const EncodeOptions&);

std::unique_ptr<EncodedTable> encode_row_format(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_pq(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_multihash(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_qr(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_lowrank(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_pruned(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);
std::unique_ptr<EncodedTable> encode_offload(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&);

// Expose a protected constructor to the encoders.
class TableBase : public EncodedTable {
 public:
  nlohmann::json& params_mut() { return params_; }

 protected:
  using EncodedTable::EncodedTable;
};

}  // namespace edo::kernels::detail
