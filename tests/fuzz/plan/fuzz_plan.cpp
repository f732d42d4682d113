// Fuzz target: plan import (`edo export PLAN`, tuner::plan_from_text) on any bytes, JSON or
// YAML. Beyond not crashing: an input refused must be refused with a PlanError (the one line
// `edo export` prints), and a plan accepted must write out as JSON and YAML that both read
// back to the same document, and as a TorchRec file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "edo/tuner/plan_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edo::tuner;
  const std::string text(reinterpret_cast<const char*>(data), size);
  edo::model::TuneResult plan;
  try {
    plan = plan_from_text(text);
  } catch (const PlanError&) {
    return 0;
  }
  const std::string json = plan_to_json_text(plan);
  const std::string from_json = plan_to_json_text(plan_from_text(json));
  const std::string from_yaml = plan_to_json_text(plan_from_text(plan_to_yaml(plan)));
  if (from_json != json || from_yaml != json) std::abort();
  (void)plan_to_torchrec(plan);
  return 0;
}
