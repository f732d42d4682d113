#include "support/plan/recording_exports.h"

#include <stdexcept>

#include "edo/db/profile_store.h"
#include "edo/tuner/fbgemm_bench.h"
#include "edo/tuner/torchrec_facts.h"

namespace edo::cli {

std::map<std::string, tuner::TorchRecFacts> torchrec_facts_of_file(const std::string& path) {
  if (!db::is_sqlite_file(path)) return {};
  db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
  return tuner::torchrec_facts(store.load());
}

nlohmann::ordered_json fbgemm_bench_of_file(const std::string& path) {
  if (!db::is_sqlite_file(path))
    throw std::runtime_error("the fbgemm-bench format needs a recording (.edodb): a plan file has no access counts; export from the .edodb that 'edo record' wrote");
  db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
  return tuner::fbgemm_bench_json(store.load());
}

}  // namespace edo::cli
