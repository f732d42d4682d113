#include "torchrec_key_value.h"

#include <algorithm>
#include <stdexcept>

#include "edo/kernels/strategy.h"

#include <nlohmann/json.hpp>

#include "cache_policies.h"

namespace edo::tuner {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
// A CacheLib item (FBGEMM's L2): the row id as the key (int64) and CacheLib's item header
// (CacheLib's FAQ: an item is "size of key + size of value + 32 bytes").
constexpr uint64_t kL2ItemOverhead = 8 + 32;
// The cache_load_factor of every SSD TBE TorchRec builds (`cache_load_factor = 0.2` in
// _populate_ssd_tbe_params, torchrec/distributed/batched_embedding_kernel.py line 351; its
// planner's KV_CACHING_RATIO is the same 0.2).
constexpr double kKeyValueCachingRatio = 0.2;

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

std::optional<KeyValueSizing> key_value_sizing(const model::StrategyParams& p, uint64_t rows, uint32_t dim, uint32_t element_bytes,
                                               std::string& why_not) {
  const auto device_rows = p.device_cache_rows, host_rows = p.host_cache_rows;
  if (!device_rows || !host_rows) {
    why_not = "the plan's ssd params have no device_cache_rows and host_cache_rows (whole row counts)";
    return std::nullopt;
  }
  if (rows == 0 || dim == 0 || element_bytes == 0) {
    why_not = "the table's rows, dim or row format are not recorded";
    return std::nullopt;
  }
  KeyValueSizing s;
  s.device_cache_rows = *device_rows;
  s.host_cache_rows = *host_rows;
  // Whole sets of 32 rows, rounded up, in whole MB, rounded up: TorchRec's cap
  // int(MB x 2^20 / 32 / element bytes / dim) is then at least the sets the replay's rows need,
  // so the L1 holds at least those rows and hits at least as often.
  const uint64_t set_bytes = uint64_t{kFbgemmWays} * element_bytes * dim;
  const uint64_t needed_sets = std::max<uint64_t>(1, ceil_div(s.device_cache_rows, kFbgemmWays));
  s.max_l1_cache_mb = ceil_div(needed_sets * set_bytes, kMiB);
  // TorchRec's other bound, int(0.2 x rows / 32) at least 1, in its floating-point order.
  const auto fifth_sets = std::max<uint64_t>(1, static_cast<uint64_t>(kKeyValueCachingRatio * static_cast<double>(rows) / kFbgemmWays));
  if (needed_sets > fifth_sets) {
    why_not = "TorchRec's SSD TBE caps the device cache at 0.2 of the rows (KV_CACHING_RATIO; a table's load factor "
              "does not reach it) and the replay's device cache is larger";
    return std::nullopt;
  }
  s.l1_sets = std::min(s.max_l1_cache_mb * kMiB / set_bytes, fifth_sets);
  // Whole GB, rounded up: room for host_cache_rows items. CacheLib's allocation classes can
  // round an item up further (to its class size); the whole-GB rounding usually covers that.
  const uint64_t item_bytes = uint64_t{dim} * element_bytes + kL2ItemOverhead;
  s.l2_cache_gb = ceil_div(s.host_cache_rows * item_bytes, kGiB);
  return s;
}

std::string ssd_row_format(const model::TuneCandidate& c, const model::TuneTable& t) {
  try {
    const std::string f = kernels::StrategySpec::parse(c.spec).name;
    if (f == "fp32" || f == "fp16" || f == "bf16" || f == "fp8" || f == "int8" || f == "int4") return f;
  } catch (const std::invalid_argument&) {
  }
  return t.dtype.empty() ? "fp32" : t.dtype;
}

nlohmann::ordered_json key_value_params_json(const model::TuneCandidate& c, const model::TuneTable& t) {
  const std::string f = ssd_row_format(c, t);
  std::string why_not;
  const auto kv = f == "fp32" || f == "fp16" ? key_value_sizing(c.params, t.rows, t.dim, f == "fp16" ? 2 : 4, why_not) : std::nullopt;
  if (!kv) return nullptr;
  return {{"max_l1_cache_size", kv->max_l1_cache_mb}, {"l2_cache_size", kv->l2_cache_gb}, {"l1_rows", kv->l1_sets * kFbgemmWays}};
}

}  // namespace edo::tuner
