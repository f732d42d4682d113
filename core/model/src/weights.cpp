#include "edo/model/weights.h"

#include "edo/model/profile.h"

namespace edo::model {

bool WeightSnapshot::consistent() const {
  const uint32_t elem = dtype_size(dtype);
  if (elem == 0 || dim == 0 || hot_count > rows.size()) return false;
  return values.size() == rows.size() * uint64_t{dim} * elem;
}

}  // namespace edo::model
