// The training loss of a recording as the Diff view draws it (the PyTorch hooks' losses,
// Session::losses of model::loss_session()), downsampled for the screen like the memory
// timeline: every bucket of steps keeps its lowest and its highest loss, so no spike is lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "edo/model/profile.h"

namespace edo::gui {

struct LossCurve {
  std::vector<double> step, loss;              // finite losses, steps ascending; about 2 * buckets points
  size_t count = 0;                            // losses recorded (finite or not)
  std::optional<uint64_t> first_nonfinite_step;
  double final_loss = 0;                       // model::summarize_losses()'s (NaN: none, or not finite)
  bool empty() const { return count == 0; }
};

LossCurve build_loss_curve(const model::Profile& profile, size_t buckets = 400);

}  // namespace edo::gui
