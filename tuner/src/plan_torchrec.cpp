// The plan as Python for TorchRec's sharding planner. Everything recorded (table names, the
// device, strategy specs) appears only inside string literals built by python_string(); the
// rest of the file is fixed text, so no recorded name can become code.
#include <cmath>
#include <cstdio>
#include <string>

#include "edo/tuner/plan_io.h"

namespace edo::tuner {

using model::TuneCandidate;
using model::TuneResult;

namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// TorchRec's DataType member for an edo row format, or "" when it has none.
std::string data_type_of(const std::string& strategy) {
  if (strategy == "fp32") return "FP32";
  if (strategy == "fp16") return "FP16";
  if (strategy == "bf16") return "BF16";
  if (strategy == "int8") return "INT8";
  if (strategy == "int4") return "INT4";
  if (strategy == "offload") return "FP32";  // edo's offload keeps fp32 rows on the host
  return "";
}

double cache_load_factor(const TuneCandidate& c, uint64_t rows) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  if (p.is_object() && p.contains("cache_rows") && p["cache_rows"].is_number() && rows > 0)
    return p["cache_rows"].get<double>() / static_cast<double>(rows);
  if (p.is_object() && p.contains("cache") && p["cache"].is_number()) return p["cache"].get<double>();
  return 0.0;
}

bool lru_policy(const TuneCandidate& c) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  return !(p.is_object() && p.contains("policy") && p["policy"] == "static");
}

}  // namespace

std::string plan_to_torchrec(const TuneResult& r) {
  std::string constraints, data_types, edo_only, shared;
  for (const auto& ch : r.choices) {
    if (ch.candidate < 0 || static_cast<size_t>(ch.candidate) >= r.candidates.size()) continue;  // not tuned
    const TuneCandidate& c = r.candidates[static_cast<size_t>(ch.candidate)];
    const std::string name = python_string(ch.table);
    if (!ch.shares_with.empty()) {
      shared += "    " + name + ": " + python_string(ch.shares_with) + ",\n";
      continue;
    }
    uint64_t rows = 0;
    bool training = false;
    for (const auto& t : r.tables)
      if (t.name == ch.table) {
        rows = t.rows;
        training = !t.optimizer.empty();
      }
    const std::string dt = data_type_of(c.strategy);
    if (dt.empty()) {
      // PQ, hashing, QR, low rank, pruning, fp8: no TorchRec kernel. The table keeps TorchRec's
      // default placement; the edo strategy is listed for whoever implements it.
      edo_only += "    " + name + ": " + python_string(c.spec) + ",\n";
      continue;
    }
    data_types += "    " + name + ": DataType." + dt + ",\n";
    std::string kernel = training ? "FUSED" : "QUANT";
    std::string cache;
    if (c.strategy == "offload") {
      kernel += "_UVM_CACHING";
      cache = "        cache_params=CacheParams(algorithm=CacheAlgorithm." + std::string(lru_policy(c) ? "LRU" : "LFU") +
              ", load_factor=" + number(cache_load_factor(c, rows)) + "),\n";
    }
    constraints += "    " + name + ": ParameterConstraints(\n        compute_kernels=[EmbeddingComputeKernel." + kernel +
                   ".value],\n" + cache + "    ),\n";
  }
  std::string out;
  out += "# edo plan for TorchRec's sharding planner, written by `edo export --format torchrec`\n";
  out += "# (schema edo.plan/1). Recorded text (table names, the device) appears only in string\n";
  out += "# literals. Use:\n";
  out += "#   from this_file import constraints, data_types\n";
  out += "#   EmbeddingBagConfig(name=n, ..., data_type=data_types.get(n, DataType.FP32))\n";
  out += "#   EmbeddingShardingPlanner(topology=..., constraints=constraints)\n";
  out += "# edo_only: tables whose chosen strategy TorchRec has no kernel for (edo strategy spec).\n";
  out += "# shared_with: tables tied to another table's weights (one EmbeddingBagConfig, two features).\n";
  out += "from fbgemm_gpu.split_table_batched_embeddings_ops_common import CacheAlgorithm\n";
  out += "from torchrec.distributed.embedding_types import EmbeddingComputeKernel\n";
  out += "from torchrec.distributed.planner.types import ParameterConstraints\n";
  out += "from torchrec.distributed.types import CacheParams\n";
  out += "from torchrec.modules.embedding_configs import DataType\n\n";
  out += "EDO_PLAN = {\n";
  out += "    \"schema\": " + python_string(kPlanSchema) + ",\n";
  out += "    \"backend\": " + python_string(r.backend) + ",\n";
  out += "    \"device\": " + python_string(r.device) + ",\n";
  out += "    \"weights\": " + python_string(r.weights) + ",\n";
  out += "    \"budget_bytes\": " + std::to_string(r.budget_bytes) + ",\n";
  out += "    \"plan_device_bytes\": " + std::to_string(r.plan_device_bytes) + ",\n";
  out += "    \"feasible\": " + std::string(r.feasible ? "True" : "False") + ",\n";
  out += "}\n\n";
  out += "constraints = {\n" + constraints + "}\n\n";
  out += "data_types = {\n" + data_types + "}\n\n";
  out += "edo_only = {\n" + edo_only + "}\n\n";
  out += "shared_with = {\n" + shared + "}\n";
  return out;
}

}  // namespace edo::tuner
