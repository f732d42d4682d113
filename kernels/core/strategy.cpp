// The backend-neutral parts of the strategy API: spec parsing, format descriptions, the
// EncodedTable entry points (argument checks before any backend runs), the error measure.
#include "edo/kernels/strategy.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <numeric>
#include <sstream>


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

std::optional<std::string> strategy_of_dtype(DType t) {
  switch (t) {
    case DType::Fp32: return "fp32";
    case DType::Fp16: return "fp16";
    case DType::Bf16: return "bf16";
    case DType::Fp8E4M3: return "fp8";
    default: return std::nullopt;
  }
}

DType storage_dtype(FormatKind k) {
  switch (k) {
    case FormatKind::F16: return DType::Fp16;
    case FormatKind::BF16: return DType::Bf16;
    case FormatKind::FP8: return DType::Fp8E4M3;
    case FormatKind::INT8:
    case FormatKind::INT4:
    case FormatKind::PQ: return DType::Uint8;
    default: return DType::Fp32;
  }
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

// ---- checks -------------------------------------------------------------------------------
void check_indices(const std::int64_t* idx, std::int64_t n, std::uint64_t rows) {
  if (n <= 0) return;
  // Largest id as unsigned (a negative id becomes huge): one vectorised pass, then a search
  // for the first bad position only when there is one.
  std::uint64_t m = 0;
  if (n < (1 << 20)) {
    for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<std::uint64_t>(idx[i]));
  } else {
#pragma omp parallel for num_threads(num_threads()) reduction(max : m) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<std::uint64_t>(idx[i]));
  }
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
  RowGradients g;
  row_gradients(idx, n, offsets, n_bags, psw, mode, grad_out, g);
  if (g.count() > 0) apply_row_gradients(g.rows.data(), g.grads.data(), static_cast<std::int64_t>(g.count()), lr);
}

namespace {
// Elements (rows x dim) below which a training step's loops run on the calling thread alone
// (the same bound in kernels/cpu/optimizer_update.cpp and row_tables.cpp).
constexpr std::int64_t kTeamMinElements = std::int64_t{1} << 16;
}  // namespace

void EncodedTable::row_gradients(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
                                 const float* psw, Pooling mode, const float* grad_out, RowGradients& out) const {
  check_offsets(offsets, n_bags, n);
  check_indices(idx, n, rows_);
  out.rows.clear();
  out.grads.clear();
  if (n == 0) return;
  // Row gradient of index p: w_p * grad_out[bag(p)] (/ len for mean). Positions sorted by
  // (row, position) so duplicates are summed in fp32 in position order (deterministic) and
  // each row is updated once.
  auto& bag_of = out.bag_of;
  auto& order = out.order;
  auto& starts = out.starts;
  bag_of.resize(static_cast<std::size_t>(n));
  for (std::int64_t b = 0; b < n_bags; ++b)
    for (std::int64_t p = offsets[b]; p < offsets[b + 1]; ++p) bag_of[p] = b;
  order.resize(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return idx[a] != idx[b] ? idx[a] < idx[b] : a < b; });
  starts.clear();
  for (std::int64_t i = 0; i < n; ++i)
    if (i == 0 || idx[order[i]] != idx[order[i - 1]]) starts.push_back(i);
  const std::int64_t groups = static_cast<std::int64_t>(starts.size());
  starts.push_back(n);
  const std::uint32_t D = dim_;
  out.rows.resize(static_cast<std::size_t>(groups));
  out.grads.assign(static_cast<std::size_t>(groups) * D, 0.f);
  std::int64_t* rows = out.rows.data();
  float* grads = out.grads.data();
  // A team only for work that outweighs starting it (a step of a few thousand lookups runs
  // serially: on a busy machine a team's barrier can cost more than the work).
#pragma omp parallel for num_threads(num_threads()) schedule(static) if (n * static_cast<std::int64_t>(D) >= kTeamMinElements)
  for (std::int64_t g = 0; g < groups; ++g) {
    float* acc = grads + static_cast<std::size_t>(g) * D;
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
}

void EncodedTable::apply_row_updates(const std::int64_t* rows, const float* updates, std::int64_t count) {
  if (!has_backward()) throw std::logic_error("strategy " + name_ + " has no backward (not trainable in this format)");
  // W -= 1 * update: exact for fp32, one rounding per element for fp16/bf16.
  if (count > 0) apply_row_gradients(rows, updates, count, 1.f);
}

void EncodedTable::apply_row_gradients(const std::int64_t*, const float*, std::int64_t, float) {
  throw std::logic_error("strategy " + name_ + " has no backward");
}

// ---- error ----------------------------------------------------------------------------------
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

}  // namespace edo::kernels
