// One export function for `edo export` and the dashboard, so that both write the same bytes.
#include <stdexcept>

#include "edo/tuner/plan_io.h"

namespace edo::tuner {

std::string plan_document(const model::TuneResult& result, const std::string& format,
                          const std::map<std::string, TorchRecFacts>& facts) {
  if (format == "json") return plan_to_json_text(result);
  if (format == "yaml") return plan_to_yaml(result);
  if (format == "torchrec") return plan_to_torchrec(result, facts);
  throw std::invalid_argument("unknown plan format '" + format + "': use json, yaml or torchrec");
}

}  // namespace edo::tuner
