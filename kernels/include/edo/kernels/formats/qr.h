// Quotient-remainder compositional embedding (strategy "qr", Shi et al. 2020): two tables,
//   Q: ceil(V/m) x D fp32 indexed by r / m,   R: m x D fp32 indexed by r % m,
//   op=mult: x(r) = Q[r/m] * R[r%m] (element-wise);  op=add: x(r) = Q[r/m] + R[r%m].
// device bytes = (ceil(V/m) + m) * D * 4. Needs retraining (the encoder fits Q and R to the
// fp32 weights by alternating least squares).
#pragma once

#include "edo/kernels/formats/common.h"

namespace edo::kernels {

enum class QrOp : std::uint32_t { Mult = 0, Add = 1 };

struct QrView {
  const float* q;
  const float* r;
  std::uint64_t m;
  std::uint32_t dim;
  QrOp op;
};

EDO_HD float qr_combine(QrOp op, float a, float b) { return op == QrOp::Mult ? a * b : a + b; }

EDO_HD float qr_value(const QrView& v, std::int64_t row, std::uint32_t d) {
  const std::uint64_t ur = static_cast<std::uint64_t>(row);
  return qr_combine(v.op, v.q[(ur / v.m) * v.dim + d], v.r[(ur % v.m) * v.dim + d]);
}

}  // namespace edo::kernels
