#include "edo/gui/recording/loss_curve.h"

#include <algorithm>
#include <cmath>

#include "edo/model/training.h"

namespace edo::gui {

LossCurve build_loss_curve(const model::Profile& profile, size_t buckets) {
  LossCurve c;
  const model::Session* s = model::loss_session(profile);
  if (!s) return c;
  const model::LossSummary sum = model::summarize_losses(s->losses);
  c.count = sum.count;
  c.final_loss = sum.final_loss;
  if (sum.first_nonfinite) c.first_nonfinite_step = sum.first_nonfinite->step;
  std::vector<model::StepLoss> finite;
  for (const auto& l : s->losses)
    if (std::isfinite(l.loss)) finite.push_back(l);
  std::stable_sort(finite.begin(), finite.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  if (finite.empty()) return c;
  buckets = std::max<size_t>(buckets, 1);
  const double lo = static_cast<double>(finite.front().step);
  const double span = static_cast<double>(finite.back().step) - lo + 1.0;
  // Each bucket's lowest and highest loss, in step order (one point when they are the same).
  size_t i = 0;
  while (i < finite.size()) {
    const auto bucket = [&](size_t k) {
      return static_cast<size_t>((static_cast<double>(finite[k].step) - lo) / span * static_cast<double>(buckets));
    };
    const size_t b = bucket(i);
    size_t lo_at = i, hi_at = i, j = i;
    for (; j < finite.size() && bucket(j) == b; ++j) {
      if (finite[j].loss < finite[lo_at].loss) lo_at = j;
      if (finite[j].loss > finite[hi_at].loss) hi_at = j;
    }
    const auto push = [&](size_t k) {
      c.step.push_back(static_cast<double>(finite[k].step));
      c.loss.push_back(finite[k].loss);
    };
    push(std::min(lo_at, hi_at));
    if (lo_at != hi_at) push(std::max(lo_at, hi_at));
    i = j;
  }
  return c;
}

}  // namespace edo::gui
