// The host and SSD budgets' part of a verdict (summary.h tier_shortfall).
#include "edo/model/profile_summary.h"
#include "edo/tuner/summary.h"
#include "edo/tuner/tuner.h"

namespace edo::tuner {

std::string tier_shortfall(const model::TuneResult& r, const model::ReasonWords& words) {
  if (r.feasible || (r.host_budget_bytes == 0 && r.ssd_budget_bytes == 0)) return "";
  // The plan the device budget gets without the tier limits: what it puts on each tier says
  // which limit stopped it and by how much.
  model::TuneResult free = r;
  free.host_budget_bytes = free.ssd_budget_bytes = 0;
  replan(free, r.budget_bytes, r.max_error);
  if (!free.feasible) return "";  // the device budget alone is not met
  std::string out;
  auto say = [&](const char* tier, uint64_t budget, uint64_t planned) {
    if (budget == 0 || planned <= budget) return;
    out += std::string(out.empty() ? "" : "; ") + "the " + tier + " budget of " + model::format_bytes(budget) + " is " +
           model::format_bytes(planned - budget) + " short of the " + model::format_bytes(planned) +
           " the plan for this device budget puts on the " + tier + " (" + words.say({.code = model::Reason::kRaiseTierBudget, .name = tier}) + ")";
  };
  say("host", r.host_budget_bytes, free.plan_host_bytes);
  say("SSD", r.ssd_budget_bytes, free.plan_ssd_bytes);
  if (out.empty()) out = words.say({.code = model::Reason::kTierBudgetsTogether});
  if (r.min_feasible_bytes != UINT64_MAX)
    out += "; within these host and SSD budgets the smallest device budget is " + model::format_bytes(r.min_feasible_bytes);
  return out;
}

}  // namespace edo::tuner
