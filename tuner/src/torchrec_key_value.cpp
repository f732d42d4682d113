#include "torchrec_key_value.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cache_policies.h"

namespace edo::tuner {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
// A CacheLib item (FBGEMM's L2): the row id as the key (int64) and CacheLib's item header
// (CacheLib's FAQ: an item is "size of key + size of value + 32 bytes").
constexpr uint64_t kL2ItemOverhead = 8 + 32;

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

std::optional<KeyValueSizing> key_value_sizing(const std::string& params_json, uint64_t rows, uint32_t dim,
                                               uint32_t element_bytes, std::string& why_not) {
  const auto p = nlohmann::json::parse(params_json.empty() ? "{}" : params_json, nullptr, false);
  auto count = [&](const char* key) -> std::optional<uint64_t> {
    if (p.is_object() && p.contains(key) && p[key].is_number_unsigned()) return p[key].get<uint64_t>();
    return std::nullopt;
  };
  const auto device_rows = count("device_cache_rows"), host_rows = count("host_cache_rows");
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
  // Whole sets of 32 rows, rounded up (FBGEMM allocates at least one): the L1 holds at least
  // the rows the replay gave it, so its hit rate is at least the replayed one.
  s.l1_sets = std::max<uint64_t>(1, ceil_div(s.device_cache_rows, kFbgemmWays));
  // TorchRec caps the sets at floor(MB x 2^20 / 32 / element bytes / dim): the MB rounded up
  // keeps every one of them (the cap is then at least l1_sets; the load factor below decides).
  s.max_l1_cache_mb = ceil_div(s.l1_sets * kFbgemmWays * element_bytes * dim, kMiB);
  // int(load_factor x rows / 32) = l1_sets exactly: half a row past the sets' rows, so
  // floating-point error cannot drop a set. At most 1 (a device cache of the whole table).
  s.load_factor = std::min(1.0, (static_cast<double>(s.l1_sets * kFbgemmWays) + 16.0) / static_cast<double>(rows));
  // Whole GB, rounded up: room for host_cache_rows items. CacheLib's allocation classes can
  // round an item up further (to its class size); the whole-GB rounding usually covers that.
  const uint64_t item_bytes = uint64_t{dim} * element_bytes + kL2ItemOverhead;
  s.l2_cache_gb = ceil_div(s.host_cache_rows * item_bytes, kGiB);
  return s;
}

}  // namespace edo::tuner
