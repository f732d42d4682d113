// The memory-traffic model of each strategy (access_model) and the sector arithmetic the
// CUDA bounds use.
#include <cmath>
#include <cstdio>
#include <numeric>

#include "edo/kernels/bench.h"

namespace edo::kernels {

double sector_bytes(double bytes, double stride) {
  if (bytes <= 0) return 0;
  const auto s = static_cast<std::uint64_t>(stride > 0 ? stride : bytes);
  const auto b = static_cast<std::uint64_t>(std::ceil(bytes));
  // Start offsets modulo 32 repeat after 32 / gcd(stride, 32) entries.
  const std::uint64_t period = 32 / std::gcd<std::uint64_t>(s % 32 == 0 ? 32 : s % 32, 32);
  double sum = 0;
  for (std::uint64_t i = 0; i < period; ++i) {
    const std::uint64_t off = (i * s) % 32;
    sum += static_cast<double>((off + b + 31) / 32 * 32);
  }
  return sum / static_cast<double>(period);
}

namespace {
std::string basis(double reads, double bytes, double stride) {
  char b[96];
  if (bytes == stride) std::snprintf(b, sizeof b, "%g x %g B", reads, bytes);
  else std::snprintf(b, sizeof b, "%g x %g B of %g B entries", reads, bytes, stride);
  return b;
}
}  // namespace

AccessModel access_model(const EncodedTable& t) {
  const FormatData f = t.format_data();
  const double D = t.dim();
  AccessModel m;
  m.entries = t.rows();
  switch (f.kind) {
    case FormatKind::F32: m.read_bytes = 4 * D; break;
    case FormatKind::F16:
    case FormatKind::BF16: m.read_bytes = 2 * D; break;
    case FormatKind::FP8: m.read_bytes = D + (f.scalar("table_scale") != 0 ? 0 : 4); break;
    case FormatKind::INT8: m.read_bytes = D + 8; break;
    case FormatKind::INT4: m.read_bytes = std::ceil(D / 2) + 4; break;
    case FormatKind::PQ:
      m.read_bytes = f.scalar("m");
      m.onchip_bytes = 4 * D;  // the m sub-vectors of the codebook
      break;
    case FormatKind::MultiHash:
      m.reads = f.scalar("k");
      m.read_bytes = 4 * f.scalar("width");
      m.entries = static_cast<std::uint64_t>(f.scalar("buckets"));
      break;
    case FormatKind::QR: {
      const double qm = f.scalar("m");
      m.read_bytes = 4 * D;
      m.entries = static_cast<std::uint64_t>(std::ceil(static_cast<double>(t.rows()) / qm));
      // R's rows: on chip while the array is small (the default m = 4), else a second read.
      if (qm * 4 * D <= (4 << 20)) m.onchip_bytes = 4 * D;
      else m.reads = 2;
      break;
    }
    case FormatKind::LowRank: m.read_bytes = 4 * f.scalar("rank"); break;
    case FormatKind::Pruned:
      m.read_bytes = 4 * D;
      m.entries = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(f.scalar("kept")));
      m.index_bytes = 4;
      break;
    case FormatKind::Offload:
      m.read_bytes = 4 * D;
      m.index_bytes = 4;
      break;
  }
  m.stride = f.row_bytes ? static_cast<double>(f.row_bytes) : m.read_bytes;
  m.basis = basis(m.reads, m.read_bytes, m.stride);
  if (m.index_bytes > 0) m.basis += " + 4 B index entry";
  if (m.onchip_bytes > 0) m.basis += " + " + std::to_string(static_cast<int>(m.onchip_bytes)) + " B on chip";
  return m;
}

}  // namespace edo::kernels
