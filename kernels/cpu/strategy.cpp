#include "kernels/cpu/strategy.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <numeric>
#include <sstream>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/encoders.h"
#include "kernels/cpu/thread_team.h"

namespace edo::kernels {

namespace {
std::string oor_message(std::int64_t index, std::int64_t position, std::uint64_t rows) {
  std::ostringstream s;
  s << "index " << index << " (at position " << position << ") is out of range for a table of " << rows
    << " rows (valid: 0.." << (rows ? rows - 1 : 0) << ")";
  return s.str();
}
std::atomic<int> g_threads{0};
}  // namespace

IndexOutOfRange::IndexOutOfRange(std::int64_t i, std::int64_t p, std::uint64_t r)
    : std::out_of_range(oor_message(i, p, r)), index(i), position(p), rows(r) {}

// ---- spec parsing -------------------------------------------------------------------------
StrategySpec StrategySpec::parse(const std::string& text) {
  StrategySpec s;
  std::stringstream in(text);
  std::string part;
  bool first = true;
  while (std::getline(in, part, ':')) {
    if (first) {
      s.name = part;
      first = false;
      continue;
    }
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("strategy '" + text + "': parameter '" + part + "' is not key=value");
    s.params[part.substr(0, eq)] = part.substr(eq + 1);
  }
  if (s.name.empty()) throw std::invalid_argument("empty strategy name in '" + text + "'");
  const auto& names = strategy_names();
  if (std::find(names.begin(), names.end(), s.name) == names.end()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown strategy '" + s.name + "' (known: " + all + ")");
  }
  return s;
}

std::vector<StrategySpec> StrategySpec::parse_list(const std::string& list) {
  std::vector<StrategySpec> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    if (item == "all") {
      auto all = parse_list(default_strategy_list());
      out.insert(out.end(), all.begin(), all.end());
      continue;
    }
    out.push_back(parse(item));
  }
  if (out.empty()) throw std::invalid_argument("no strategy given");
  return out;
}

std::string StrategySpec::to_string() const {
  std::string s = name;
  for (const auto& [k, v] : params) s += ":" + k + "=" + v;
  return s;
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> n{"fp32", "fp16", "bf16", "fp8", "int8", "int4", "pq",
                                          "multihash", "qr", "lowrank", "pruned", "offload"};
  return n;
}

std::string default_strategy_list() {
  return "fp32,fp16,bf16,fp8,int8,int4,pq,multihash,qr,lowrank,pruned,offload:policy=static,offload:policy=lru";
}

const FormatData::Array& FormatData::array(const std::string& name) const {
  for (const auto& a : arrays)
    if (a.name == name) return a;
  throw std::logic_error("format data has no array '" + name + "'");
}
double FormatData::scalar(const std::string& name) const {
  auto it = scalars.find(name);
  if (it == scalars.end()) throw std::logic_error("format data has no scalar '" + name + "'");
  return it->second;
}

// ---- parameters ---------------------------------------------------------------------------
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

// ---- checks -------------------------------------------------------------------------------
void check_indices(const std::int64_t* idx, std::int64_t n, std::uint64_t rows) {
  if (n <= 0) return;
  const std::uint64_t m = cpu::kernels().max_index(idx, n, num_threads());
  if (m < rows) return;
  for (std::int64_t i = 0; i < n; ++i)
    if (static_cast<std::uint64_t>(idx[i]) >= rows) throw IndexOutOfRange(idx[i], i, rows);
}

void check_offsets(const std::int64_t* offsets, std::int64_t n_bags, std::int64_t n) {
  if (n_bags < 0) throw std::invalid_argument("negative number of bags");
  if (!offsets) throw std::invalid_argument("bag offsets are null");
  if (offsets[0] != 0) throw std::invalid_argument("bag offsets must start at 0 (got " + std::to_string(offsets[0]) + ")");
  for (std::int64_t b = 0; b < n_bags; ++b)
    if (offsets[b + 1] < offsets[b])
      throw std::invalid_argument("bag offsets decrease at bag " + std::to_string(b) + " (" + std::to_string(offsets[b]) +
                                  " > " + std::to_string(offsets[b + 1]) + ")");
  if (offsets[n_bags] != n)
    throw std::invalid_argument("last bag offset " + std::to_string(offsets[n_bags]) + " != number of indices " + std::to_string(n));
}

// ---- EncodedTable -------------------------------------------------------------------------
void EncodedTable::gather(const std::int64_t* idx, std::int64_t n, float* out) const {
  if (n < 0) throw std::invalid_argument("negative number of indices");
  check_indices(idx, n, rows_);
  if (n > 0) lookup(idx, n, nullptr, n, nullptr, Pooling::Sum, out);
}

void EncodedTable::bag(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                       const float* psw, Pooling mode, float* out) const {
  check_offsets(offsets, n_bags, n);
  check_indices(idx, n, rows_);
  if (n_bags > 0) lookup(idx, n, offsets, n_bags, psw, mode, out);
}

void EncodedTable::backward(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                            const float* psw, Pooling mode, const float* grad_out, float lr) {
  if (!has_backward()) throw std::logic_error("strategy " + name_ + " has no backward (not trainable in this format)");
  check_offsets(offsets, n_bags, n);
  check_indices(idx, n, rows_);
  if (n == 0) return;
  // Row gradient of index p: w_p * grad_out[bag(p)] (/ len for mean). Sort positions by row so
  // duplicates are summed in fp32 (in position order: deterministic) and each row is
  // updated once.
  std::vector<std::int64_t> bag_of(static_cast<std::size_t>(n));
  for (std::int64_t b = 0; b < n_bags; ++b)
    for (std::int64_t p = offsets[b]; p < offsets[b + 1]; ++p) bag_of[p] = b;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return idx[a] < idx[b]; });
  std::vector<std::int64_t> starts;
  for (std::int64_t i = 0; i < n; ++i)
    if (i == 0 || idx[order[i]] != idx[order[i - 1]]) starts.push_back(i);
  const std::int64_t groups = static_cast<std::int64_t>(starts.size());
  starts.push_back(n);
  const std::uint32_t D = dim_;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(groups));
  std::vector<float> grads(static_cast<std::size_t>(groups) * D, 0.f);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (std::int64_t g = 0; g < groups; ++g) {
    float* acc = grads.data() + static_cast<std::size_t>(g) * D;
    rows[g] = idx[order[starts[g]]];
    for (std::int64_t i = starts[g]; i < starts[g + 1]; ++i) {
      const std::int64_t p = order[i];
      const std::int64_t b = bag_of[p];
      float w = psw ? psw[p] : 1.f;
      if (mode == Pooling::Mean) w /= static_cast<float>(offsets[b + 1] - offsets[b]);
      const float* go = grad_out + static_cast<std::size_t>(b) * D;
      for (std::uint32_t d = 0; d < D; ++d) acc[d] += w * go[d];
    }
  }
  apply_row_gradients(rows.data(), grads.data(), groups, lr);
}

void EncodedTable::apply_row_gradients(const std::int64_t*, const float*, std::int64_t, float) {
  throw std::logic_error("strategy " + name_ + " has no backward");
}

// ---- factory and error --------------------------------------------------------------------
std::unique_ptr<EncodedTable> encode(const StrategySpec& spec, const float* weights, std::uint64_t rows,
                                     std::uint32_t dim, const EncodeOptions& options) {
  if (rows == 0 || dim == 0) throw std::invalid_argument("table must have at least one row and one column");
  if (rows > (1ull << 40)) throw std::invalid_argument("table too large");
  const std::string& n = spec.name;
  if (n == "fp32" || n == "fp16" || n == "bf16" || n == "fp8" || n == "int8" || n == "int4")
    return detail::encode_row_format(spec, weights, rows, dim, options);
  if (n == "pq") return detail::encode_pq(spec, weights, rows, dim, options);
  if (n == "multihash") return detail::encode_multihash(spec, weights, rows, dim, options);
  if (n == "qr") return detail::encode_qr(spec, weights, rows, dim, options);
  if (n == "lowrank") return detail::encode_lowrank(spec, weights, rows, dim, options);
  if (n == "pruned") return detail::encode_pruned(spec, weights, rows, dim, options);
  if (n == "offload") return detail::encode_offload(spec, weights, rows, dim, options);
  throw std::invalid_argument("unknown strategy '" + n + "'");
}

void check_spec(const StrategySpec& spec, std::uint64_t rows, std::uint32_t dim) {
  EncodeOptions o;
  o.check_only = true;
  (void)encode(spec, nullptr, rows, dim, o);
}

double reconstruction_error(const EncodedTable& table, const float* weights, const std::uint64_t* counts) {
  const std::uint64_t R = table.rows();
  const std::uint32_t D = table.dim();
  constexpr std::uint64_t kBlock = 4096;
  double num = 0.0, den = 0.0;
  const std::int64_t blocks = static_cast<std::int64_t>((R + kBlock - 1) / kBlock);
#pragma omp parallel num_threads(num_threads()) reduction(+ : num, den)
  {
    std::vector<float> buf(kBlock * D);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t blk = 0; blk < blocks; ++blk) {
      const std::uint64_t first = static_cast<std::uint64_t>(blk) * kBlock;
      const std::uint64_t cnt = std::min(kBlock, R - first);
      table.decode_rows(first, cnt, buf.data());
      for (std::uint64_t i = 0; i < cnt; ++i) {
        const double c = counts ? static_cast<double>(counts[first + i]) : 1.0;
        if (c == 0.0) continue;
        const float* w = weights + (first + i) * D;
        const float* x = buf.data() + i * D;
        double e = 0, s = 0;
        for (std::uint32_t d = 0; d < D; ++d) {
          const double diff = static_cast<double>(w[d]) - x[d];
          e += diff * diff;
          s += static_cast<double>(w[d]) * w[d];
        }
        num += c * e;
        den += c * s;
      }
    }
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

// ---- threads ------------------------------------------------------------------------------
void set_num_threads(int n) { g_threads = std::max(0, n); }
int num_threads() {
  const int n = g_threads.load();
  return n > 0 ? n : omp_get_max_threads();
}

void pin_threads() {
  const std::vector<int>& cpus = cpu::allowed_cpus();
  if (cpus.empty()) return;
  cpu::team_pin(num_threads());  // the lookup team (calling thread: first CPU)
#pragma omp parallel num_threads(num_threads())
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<std::size_t>(omp_get_thread_num()) % cpus.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  }
}

}  // namespace edo::kernels
