// The device model's arithmetic (edo/tuner/device_model.h): the bytes and sectors one lookup
// of each kernels format moves, and the time they take on a device profile.
#include "edo/tuner/device_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "edo/kernels/formats/row_formats.h"
#include "edo/kernels/strategy.h"
#include "modelled.h"

namespace edo::tuner {

double sectors_touched(double bytes, double stride, double sector) {
  if (bytes <= 0) return 0;
  const auto g = static_cast<uint64_t>(sector);
  const auto s = static_cast<uint64_t>(std::max(1.0, stride > 0 ? stride : bytes));
  const auto b = static_cast<uint64_t>(std::ceil(bytes));
  // Start offsets modulo the sector repeat after sector / gcd(stride, sector) entries (the
  // same arithmetic as kernels/measure/bounds.cpp sector_bytes, for any sector size).
  const uint64_t period = g / std::gcd(s % g == 0 ? g : s % g, g);
  double sum = 0;
  for (uint64_t i = 0; i < period; ++i) sum += static_cast<double>(((i * s) % g + b + g - 1) / g);
  return sum / static_cast<double>(period);
}

namespace {

long long int_param(const kernels::StrategySpec& s, const char* key, long long dflt) {
  const auto it = s.params.find(key);
  return it == s.params.end() ? dflt : std::stoll(it->second);
}
std::string text_param(const kernels::StrategySpec& s, const char* key, const std::string& dflt) {
  const auto it = s.params.find(key);
  return it == s.params.end() ? dflt : it->second;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

}  // namespace

LookupTraffic lookup_traffic(const std::string& spec_text, uint32_t dim, double hit_rate, double sector) {
  return lookup_traffic(kernels::StrategySpec::parse(spec_text), dim, hit_rate, sector);
}

LookupTraffic lookup_traffic(const kernels::StrategySpec& s, uint32_t dim, double hit_rate, double sector) {
  const double D = dim;
  LookupTraffic t;
  // Every lookup reads its int64 index and writes its bag's fp32 output row, streamed.
  t.stream_bytes = 8 + 4 * D;
  auto row_read = [&](double bytes, double stride, double reads = 1) {
    t.sectors += reads * sectors_touched(bytes, stride, sector);
    t.basis = fmt("%g x %g B of a %g B row", reads, bytes, stride);
  };
  using kernels::RowKind;
  const std::string& n = s.name;
  if (n == "fp32") row_read(4 * D, kernels::row_bytes_of(RowKind::F32, dim));
  else if (n == "fp16") row_read(2 * D, kernels::row_bytes_of(RowKind::F16, dim));
  else if (n == "bf16") row_read(2 * D, kernels::row_bytes_of(RowKind::BF16, dim));
  else if (n == "fp8") {
    const bool row_scale = text_param(s, "scale", "row") == "row";
    row_read(D + (row_scale ? 4 : 0), kernels::row_bytes_of(RowKind::FP8, dim, row_scale));
  } else if (n == "int8") row_read(D + 8, kernels::row_bytes_of(RowKind::INT8, dim));   // codes + fp32 scale and bias
  else if (n == "int4") row_read(std::ceil(D / 2) + 4, kernels::row_bytes_of(RowKind::INT4, dim));  // codes + fp16 scale, bias
  else if (n == "pq") {
    // m one-byte codes per row; the m sub-vectors of the codebook (dim floats in all) come
    // from shared memory (kernels/cuda: the codebook is staged per block).
    const double m = static_cast<double>(int_param(s, "m", dim % 4 == 0 ? dim / 4 : dim % 2 == 0 ? dim / 2 : dim));
    row_read(m, m);
    t.onchip_bytes = 4 * D;
    t.basis += " + " + fmt("%g B of codebook on chip", 4 * D);
  } else if (n == "multihash") {
    // k rows of the hashed table, each `width` floats (dim; dim / k when concatenated).
    const double k = static_cast<double>(int_param(s, "k", 2));
    const double width = text_param(s, "mode", "sum") == "concat" ? std::floor(D / k) : D;
    row_read(4 * width, 4 * width, k);
  } else if (n == "qr") {
    // A quotient row from memory; the m remainder rows stay on chip while they are small
    // (kernels/measure/bounds.cpp: m x dim floats <= 4 MiB), else a second read.
    const double m = static_cast<double>(int_param(s, "m", 4));
    if (m * 4 * D <= (4 << 20)) {
      row_read(4 * D, 4 * D);
      t.onchip_bytes = 4 * D;
      t.basis += " + " + fmt("%g B of remainder row on chip", 4 * D);
    } else {
      row_read(4 * D, 4 * D, 2);
    }
  } else if (n == "lowrank") {
    // A row of A (rank floats) from memory; B (rank x dim floats) from on-chip memory once
    // per bag (kernels/cuda/element_tables.cu lowrank_bag: pool A's rows, then multiply).
    const double r = static_cast<double>(int_param(s, "rank", std::max<uint32_t>(1, dim / 8)));
    row_read(4 * r, 4 * r);
    t.onchip_bytes = 4 * r * D;
    t.basis += " + " + fmt("%g B of B on chip", 4 * r * D);
  } else if (n == "pruned") {
    // The 4-byte remap entry of the row (a sector of its own), then the kept fp32 row.
    row_read(4 * D, 4 * D);
    t.sectors += 1;
    t.basis += " + a 4 B remap entry";
  } else if (n == "offload") {
    // Hits read the device cache's fp32 row, misses the host's over the link (in whole
    // sectors: kernels/cuda/offload_table.cu reads mapped host memory from the kernel).
    const double h = std::clamp(hit_rate, 0.0, 1.0);
    const double row = sectors_touched(4 * D, 4 * D, sector);
    t.sectors = h * row + 1;  // + the slot entry (static) or the set's tags (LRU)
    t.host_bytes = (1 - h) * row * sector;
    t.basis = fmt("hits %.3f x %g B from the device cache, misses %.3f x ", h, 4 * D, 1 - h) + fmt("%g B over the host link", row * sector);
    if (text_param(s, "policy", "static") == "lru") {
      // The batch LRU before the lookup (offload_table.cu lru_batch): two memsets, probe,
      // a radix sort of 33-bit keys (histogram, scan, 5 passes), insert, fill, count: 12
      // launches before the lookup's; per index 8 B cleared, 16 B probed, 5 x 16 B sorted, 8 B
      // inserted, and each miss's row written into the cache.
      t.launches = 13;
      t.stream_bytes += 8 + 16 + 80 + 8 + (1 - h) * 4 * D;
      t.basis += "; LRU upkeep 112 B per index, 13 launches";
    }
  } else {
    throw std::invalid_argument("device model: unknown strategy '" + n + "'");
  }
  return t;
}

double modelled_step_us(const LookupTraffic& t, double lookups, const DeviceProfile& d) {
  const double per_lookup_s = t.sectors / d.sectors_per_s() + t.stream_bytes / (d.memory_gbs * 1e9) +
                              t.onchip_bytes / (d.onchip_gbs * 1e9) + t.host_bytes / (d.host_link_gbs * 1e9);
  return lookups * per_lookup_s * 1e6 + t.launches * d.launch_us;
}

}  // namespace edo::tuner
