// Test driver for tests/integration/torch/mch_check.py: runs edo's managed-collision replay
// (tuner/src/replay/mch_replay.h) on the steps and configurations of a JSON file and prints, per
// configuration, what it counted:
//   mch_replay_check FILE   FILE: {"steps": [[id, ...], ...], "configs": [{"slots": N,
//                           "interval": I, "policy": "distance_lfu"|"lfu"|"lru"}, ...]}
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "mch_replay.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mch_replay_check FILE\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded()) {
    std::cerr << "mch_replay_check: " << argv[1] << " is not JSON\n";
    return 2;
  }
  const auto steps = doc.at("steps").get<std::vector<std::vector<int64_t>>>();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : doc.at("configs")) {
    edo::tuner::MchConfig cfg;
    cfg.slots = c.at("slots").get<uint64_t>();
    cfg.eviction_interval = c.at("interval").get<uint32_t>();
    cfg.policy = edo::tuner::mch_policy_from_name(c.at("policy").get<std::string>());
    const edo::tuner::MchStats s = edo::tuner::replay_mch(steps, cfg);
    out.push_back({{"slots", cfg.slots}, {"interval", cfg.eviction_interval}, {"policy", c.at("policy")},
                   {"lookups", s.lookups}, {"hits", s.hits}, {"miss_row_reads", s.miss_row_reads},
                   {"inserts", s.inserts}, {"evictions", s.evictions}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}
