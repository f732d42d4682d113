#include "edo/tuner/llm_facts.h"

#include <nlohmann/json.hpp>

namespace edo::tuner {
namespace {

constexpr const char* kHeadPrefix = "pytorch.lm_head.";
constexpr const char* kActivationPrefix = "pytorch.activation.";

uint64_t llm_u64(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// Every value noted under `key` for `table_name`: the recording-wide one and each session's
// ("session.<id>.KEY", the collector keeps both).
std::vector<nlohmann::json> llm_notes(const model::Profile& p, const std::string& key) {
  std::vector<nlohmann::json> out;
  for (const auto& [k, v] : p.metadata) {
    const bool session_key = k.rfind("session.", 0) == 0 && k.size() > key.size() && k.compare(k.size() - key.size(), key.size(), key) == 0 &&
                             k[k.size() - key.size() - 1] == '.';
    if (k != key && !session_key) continue;
    auto j = nlohmann::json::parse(v, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

uint64_t LmHead::total_bytes() const { return tied ? 0 : weight_bytes + grad_bytes + optimizer_bytes; }

std::optional<LmHead> lm_head_of(const model::Profile& profile, const std::string& table_name) {
  std::optional<LmHead> best;
  for (const auto& j : llm_notes(profile, kHeadPrefix + table_name)) {
    if (!j.contains("head") || !j["head"].is_string() || !j.contains("tied") || !j["tied"].is_boolean()) continue;
    LmHead h;
    h.name = j["head"].get<std::string>();
    h.tied = j["tied"].get<bool>();
    h.rows = llm_u64(j, "rows");
    h.dim = llm_u64(j, "dim");
    if (j.contains("dtype") && j["dtype"].is_string()) h.dtype = j["dtype"].get<std::string>();
    h.weight_bytes = llm_u64(j, "weight_bytes");
    h.grad_bytes = llm_u64(j, "grad_bytes");
    h.optimizer_bytes = llm_u64(j, "optimizer_bytes");
    if (j.contains("optimizer_state") && j["optimizer_state"].is_object())
      for (const auto& [k, v] : j["optimizer_state"].items())
        if (v.is_number_unsigned()) h.optimizer_state[k] = v.get<uint64_t>();
    h.dense_reads_per_step = llm_u64(j, "dense_reads_per_step");
    h.dense_read_bytes_per_step = llm_u64(j, "dense_read_bytes_per_step");
    if (!best || h.total_bytes() + h.dense_read_bytes_per_step > best->total_bytes() + best->dense_read_bytes_per_step) best = h;
  }
  return best;
}

std::optional<Activation> activation_of(const model::Profile& profile, const std::string& table_name) {
  std::optional<Activation> best;
  for (const auto& j : llm_notes(profile, kActivationPrefix + table_name)) {
    if (!j.contains("output_bytes") || !j["output_bytes"].is_number_unsigned()) continue;
    Activation a;
    a.output_bytes = llm_u64(j, "output_bytes");
    a.grad_bytes = llm_u64(j, "grad_bytes");
    a.peak_bytes = a.output_bytes + a.grad_bytes;
    a.calls = llm_u64(j, "calls");
    if (j.contains("shape") && j["shape"].is_array())
      for (const auto& x : j["shape"])
        if (x.is_number_unsigned()) a.shape.push_back(x.get<uint64_t>());
    if (j.contains("dtype") && j["dtype"].is_string()) a.dtype = j["dtype"].get<std::string>();
    if (!best || a.peak_bytes > best->peak_bytes) best = a;
  }
  return best;
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? " x " : "") + std::to_string(shape[i]);
  return out;
}

}  // namespace edo::tuner
