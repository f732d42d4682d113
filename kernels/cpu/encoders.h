// Internal to edo_kernels_cpu: the encoders of each strategy and a parameter reader.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "cpu/cpu_kernels.h"
#include "edo/kernels/encode.h"

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

// Each encoder reads the spec's parameters first. With options.check_only it then returns
// nullptr, after filling *size (when given) with what the encoded table would report:
// strategy_size() and the encoded table share one formula per strategy.
using Encoder = std::unique_ptr<EncodedTable> (*)(const StrategySpec&, const float*, std::uint64_t, std::uint32_t,
                                                   const EncodeOptions&, StrategySize* size);

std::unique_ptr<EncodedTable> encode_row_format(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_pq(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_multihash(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_qr(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_lowrank(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_pruned(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);
std::unique_ptr<EncodedTable> encode_offload(const StrategySpec&, const float*, std::uint64_t, std::uint32_t, const EncodeOptions&, StrategySize*);

// Expose a protected constructor to the encoders.
class TableBase : public EncodedTable {
 public:
  nlohmann::json& params_mut() { return params_; }

 protected:
  using EncodedTable::EncodedTable;
};

}  // namespace edo::kernels::detail
