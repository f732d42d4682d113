#include "edo/model/training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace edo::model {

LossSummary summarize_losses(const std::vector<StepLoss>& losses) {
  LossSummary s;
  s.count = losses.size();
  if (losses.empty()) {
    s.final_loss = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  s.first = losses.front();
  s.last = losses.back();
  for (const StepLoss& l : losses) {
    if (!std::isfinite(l.loss)) {
      s.first_nonfinite = l;
      break;
    }
  }
  s.final_count = std::max<size_t>(1, losses.size() / 10);
  double sum = 0;
  for (size_t i = losses.size() - s.final_count; i < losses.size(); ++i) sum += losses[i].loss;
  s.final_loss = sum / static_cast<double>(s.final_count);  // NaN (or inf) when one of them is
  return s;
}

const Session* loss_session(const Profile& p) {
  const Session* best = nullptr;
  for (const Session& s : p.sessions)
    if (!s.losses.empty() && (!best || s.losses.size() > best->losses.size())) best = &s;
  return best;
}

std::optional<double> seconds_per_step(const Profile& p) {
  const Session* best = nullptr;
  for (const Session& s : p.sessions)
    if (s.steps > 0 && s.duration_ns > 0 && (!best || s.steps > best->steps)) best = &s;
  if (!best) return std::nullopt;
  return static_cast<double>(best->duration_ns) / 1e9 / static_cast<double>(best->steps);
}

namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

std::string describe_optimizer(const OptimizerParams& o) {
  std::string out = o.kind.empty() ? std::string("optimizer") : o.kind;
  out += " lr=" + num(o.lr);
  if (o.beta1 != 0 || o.beta2 != 0) out += " betas=" + num(o.beta1) + "," + num(o.beta2);
  if (o.eps != 0) out += " eps=" + num(o.eps);
  if (o.weight_decay != 0) out += " wd=" + num(o.weight_decay);
  if (o.momentum != 0) out += " momentum=" + num(o.momentum);
  if (o.initial_accumulator_value != 0) out += " init_acc=" + num(o.initial_accumulator_value);
  if (o.maximize) out += " maximize";
  return out;
}

}  // namespace edo::model
