// encode(), check_spec() and strategy_size(): the one entry per strategy, and the parameter
// reader every encoder uses.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cpu/encoders.h"

namespace edo::kernels {

namespace detail {
double ParamReader::number(const std::string& key, double dflt, double lo, double hi) {
  used_.insert(key);
  auto it = spec_.params.find(key);
  if (it == spec_.params.end()) return dflt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    std::ostringstream s;
    s << "strategy " << spec_.name << ": " << key << "=" << it->second << " is not a number in [" << lo << ", " << hi << "]";
    throw std::invalid_argument(s.str());
  }
  return v;
}
std::int64_t ParamReader::integer(const std::string& key, std::int64_t dflt, std::int64_t lo, std::int64_t hi) {
  const double v = number(key, static_cast<double>(dflt), static_cast<double>(lo), static_cast<double>(hi));
  if (v != std::floor(v)) throw std::invalid_argument("strategy " + spec_.name + ": " + key + " must be an integer");
  return static_cast<std::int64_t>(v);
}
std::string ParamReader::choice(const std::string& key, const std::string& dflt, const std::set<std::string>& allowed) {
  used_.insert(key);
  auto it = spec_.params.find(key);
  if (it == spec_.params.end()) return dflt;
  if (!allowed.count(it->second)) {
    std::string all;
    for (const auto& a : allowed) all += (all.empty() ? "" : "|") + a;
    throw std::invalid_argument("strategy " + spec_.name + ": " + key + "=" + it->second + " (allowed: " + all + ")");
  }
  return it->second;
}
void ParamReader::done() const {
  for (const auto& [k, v] : spec_.params)
    if (!used_.count(k)) throw std::invalid_argument("strategy " + spec_.name + ": unknown parameter '" + k + "'");
}

namespace {
// Rows to prefetch ahead: enough to keep about kInFlight bytes of rows in flight (16 fp32
// rows of 128 columns), at least 16 and at most 64 rows. EDO_CPU_PREFETCH=N forces N rows.
int prefetch_distance(double row_bytes) {
  static const int forced = [] {
    const char* e = std::getenv("EDO_CPU_PREFETCH");
    const int v = e ? std::atoi(e) : -1;
    return v >= 0 && v <= 1024 ? v : -1;
  }();
  static const double in_flight = [] {
    const char* e = std::getenv("EDO_CPU_PREFETCH_BYTES");
    const double v = e ? std::atof(e) : 8192.0;
    return v > 0 ? v : 8192.0;
  }();
  if (forced >= 0) return forced;
  const double rows = in_flight / std::max(1.0, row_bytes);
  return static_cast<int>(std::clamp(rows, 16.0, 64.0));
}
}  // namespace

cpu::LookupArgs make_args(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                          const float* psw, Pooling mode, float* out, std::uint32_t dim, double row_bytes) {
  return cpu::LookupArgs{idx, n, offsets, n_bags, psw, mode, out, dim, num_threads(), prefetch_distance(row_bytes)};
}
}  // namespace detail


namespace {
detail::Encoder encoder_for(const StrategySpec& spec) {
  const std::string& n = spec.name;
  if (n == "fp32" || n == "fp16" || n == "bf16" || n == "fp8" || n == "int8" || n == "int4") return detail::encode_row_format;
  if (n == "pq") return detail::encode_pq;
  if (n == "multihash") return detail::encode_multihash;
  if (n == "qr") return detail::encode_qr;
  if (n == "lowrank") return detail::encode_lowrank;
  if (n == "pruned") return detail::encode_pruned;
  if (n == "offload") return detail::encode_offload;
  throw std::invalid_argument("unknown strategy '" + n + "'");
}
void check_shape(std::uint64_t rows, std::uint32_t dim) {
  if (rows == 0 || dim == 0) throw std::invalid_argument("table must have at least one row and one column");
  if (rows > (1ull << 40)) throw std::invalid_argument("table too large");
}
}  // namespace

std::unique_ptr<EncodedTable> encode(const StrategySpec& spec, const float* weights, std::uint64_t rows,
                                     std::uint32_t dim, const EncodeOptions& options) {
  check_shape(rows, dim);
  return encoder_for(spec)(spec, weights, rows, dim, options, nullptr);
}

void check_spec(const StrategySpec& spec, std::uint64_t rows, std::uint32_t dim) {
  check_shape(rows, dim);
  EncodeOptions o;
  o.check_only = true;
  (void)encoder_for(spec)(spec, nullptr, rows, dim, o, nullptr);
}

StrategySize strategy_size(const StrategySpec& spec, std::uint64_t rows, std::uint32_t dim, const std::uint64_t* counts) {
  check_shape(rows, dim);
  EncodeOptions o;
  o.check_only = true;
  o.counts = counts;
  StrategySize s;
  (void)encoder_for(spec)(spec, nullptr, rows, dim, o, &s);
  return s;
}

}  // namespace edo::kernels
