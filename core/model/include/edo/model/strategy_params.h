// A candidate strategy's parameters, typed (docs/tuning.md "Candidates", docs/formats.md
// "params"): what the tuner's candidates say about themselves beyond the kernels' spec (cache
// sizes and how their hit rates were obtained, pruned and trimmed rows, SSD tiers, managed
// collision, the training levers' savings). Made once, when a candidate is enumerated or a
// stored run or plan file is read (strategy_params_json.h: the JSON object they are stored and
// exported as); every reader uses the fields.
//
// Every field is optional: a strategy sets its own (the comments say whose). The JSON object
// keeps its keys in the order they were set or read, so a stored run and a plan file read and
// written again are the same text.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace edo::model {

// "heldout": how a replayed hit rate was obtained (offload, ssd, mch): fitted on the first
// fit_fraction of the recorded order, replayed on the rest at sample_rate.
struct HeldOutReplay {
  std::optional<double> fit_fraction;
  std::optional<double> sample_rate;
  std::optional<uint64_t> sampled_slots;         // mch: the slots the sample replays
  std::optional<uint64_t> heldout_steps;         // mch
  std::optional<uint64_t> heldout_sampled_refs;  // lookups replayed
  bool operator==(const HeldOutReplay&) const = default;
};

// "policy_replays" (offload LRU): every replacement policy's held-out hit rate at the cache
// size (tuner/src/replay/cache_policies.h).
struct PolicyReplays {
  std::optional<uint64_t> cache_rows;
  std::optional<uint64_t> slots;  // FBGEMM's set-associative slots for it
  std::optional<double> sample_rate;
  std::optional<double> lru, lfu, fbgemm_lru, fbgemm_lfu, fbgemm_lru_prefetch, optimal;
  bool operator==(const PolicyReplays&) const = default;
};

// The order of the keys in the JSON object. Not a value: two parameter sets that differ only
// in it are equal.
struct ParamKeyOrder {
  std::vector<std::string> keys;
  bool operator==(const ParamKeyOrder&) const { return true; }
};

struct StrategyParams {
  std::optional<std::string> scale;  // fp8: "row"
  // offload (tuner/src/candidates/candidates.cpp)
  std::optional<uint64_t> cache_rows;
  std::optional<std::string> policy;  // offload "lru" / "static"; mch its eviction policy
  std::optional<HeldOutReplay> heldout;
  std::optional<std::string> hit_rate_estimated;  // why the hit rate is not held out
  std::optional<uint64_t> knee_rows;
  std::optional<PolicyReplays> policy_replays;
  std::optional<double> policy_headroom;
  std::optional<std::string> policy_replays_missing;
  std::optional<std::string> cache_policy;  // FBGEMM's algorithm: "lru" or "lfu"
  // pruned and trim_vocab
  std::optional<std::string> vocab_coverage;
  std::optional<uint64_t> kept_rows;
  std::optional<double> held_out_lost_fraction;
  std::optional<uint64_t> unk_old_id, held_out_lookups, held_out_lost_lookups, held_out_streams, saved_table_bytes, remap_bytes;
  // lowrank, pq, multihash, qr
  std::optional<uint64_t> rank, activation_bytes, m, k, iters, sample, buckets;
  // mch (mch_candidates.cpp): the module's arguments and its held-out rates
  std::optional<uint64_t> slots, eviction_interval;
  std::optional<double> decay_exponent, hit_rate, insert_rate, collision_rate, eviction_rate, own_row_rate;
  std::optional<uint64_t> module_bytes;
  std::optional<std::string> steps_approximated;
  // ssd (ssd_candidates.cpp): both caches, the two-level replay, the links, training's writes
  std::optional<uint64_t> device_cache_rows, host_cache_rows;
  std::optional<double> device_hit_rate, host_hit_rate, ssd_reads_per_step, host_fetches_per_step;
  std::optional<uint64_t> row_bytes;
  std::optional<double> host_link_gbs;
  std::optional<std::string> storage;
  std::optional<double> writebacks_per_step, ssd_writes_per_step;
  std::optional<std::string> storage_writes, optimizer;
  std::optional<uint64_t> optimizer_state_bytes;
  std::optional<std::string> optimizer_why;
  std::optional<double> ssd_read_us;
  std::optional<uint64_t> ssd_queue_depth;
  // Tables with identical weights: kept apart from / sharing one copy with these tables; in a
  // plan file, a table's own copy ("same_weights_as") and a tied table ("with", "format").
  std::optional<std::vector<std::string>> apart_from;
  std::optional<std::vector<std::string>> shared_by;
  std::optional<std::string> same_weights_as;
  std::optional<std::string> with;
  std::optional<std::string> format;
  // Training levers (llm_candidates.cpp, trim_candidates.cpp)
  std::optional<std::string> gradient;
  std::optional<uint64_t> gradient_rows_per_step;
  std::optional<std::string> gradient_rows_basis;
  std::optional<uint64_t> dense_gradient_bytes, sparse_gradient_bytes;
  std::optional<std::string> optimizer_from, head;
  std::optional<std::string> head_kind;  // trim_vocab: "tied" or "untied"
  std::optional<uint64_t> saved_bytes, saved_weight_bytes, saved_gradient_bytes, saved_optimizer_bytes, saved_head_bytes;
  std::optional<uint64_t> saved_logit_bytes_per_step;

  // Keys this edo does not know (a newer edo's), or whose value it cannot type: kept as their
  // JSON text and written back as they were.
  std::vector<std::pair<std::string, std::string>> unknown;
  ParamKeyOrder order;

  // Sets a field and puts its key after those set before (the JSON object's order).
  template <class T, class V>
  StrategyParams& set(std::optional<T> StrategyParams::*field, V&& value);

  bool operator==(const StrategyParams&) const = default;
};

// Every field with its JSON key, declared once: the JSON object is written and read from it
// (strategy_params_json.cpp); keys that were not set in an order are written in this one.
template <class T>
using ParamMember = std::optional<T> StrategyParams::*;
struct ParamField {
  const char* key;
  std::variant<ParamMember<uint64_t>, ParamMember<double>, ParamMember<std::string>, ParamMember<std::vector<std::string>>,
               ParamMember<HeldOutReplay>, ParamMember<PolicyReplays>>
      member;
};

inline const std::array<ParamField, 72> kStrategyParamFields{{
    {"scale", &StrategyParams::scale},
    {"cache_rows", &StrategyParams::cache_rows},
    {"policy", &StrategyParams::policy},
    {"heldout", &StrategyParams::heldout},
    {"hit_rate_estimated", &StrategyParams::hit_rate_estimated},
    {"knee_rows", &StrategyParams::knee_rows},
    {"policy_replays", &StrategyParams::policy_replays},
    {"policy_headroom", &StrategyParams::policy_headroom},
    {"policy_replays_missing", &StrategyParams::policy_replays_missing},
    {"cache_policy", &StrategyParams::cache_policy},
    {"vocab_coverage", &StrategyParams::vocab_coverage},
    {"kept_rows", &StrategyParams::kept_rows},
    {"held_out_lost_fraction", &StrategyParams::held_out_lost_fraction},
    {"unk_old_id", &StrategyParams::unk_old_id},
    {"held_out_lookups", &StrategyParams::held_out_lookups},
    {"held_out_lost_lookups", &StrategyParams::held_out_lost_lookups},
    {"held_out_streams", &StrategyParams::held_out_streams},
    {"saved_table_bytes", &StrategyParams::saved_table_bytes},
    {"remap_bytes", &StrategyParams::remap_bytes},
    {"rank", &StrategyParams::rank},
    {"activation_bytes", &StrategyParams::activation_bytes},
    {"m", &StrategyParams::m},
    {"k", &StrategyParams::k},
    {"iters", &StrategyParams::iters},
    {"sample", &StrategyParams::sample},
    {"buckets", &StrategyParams::buckets},
    {"slots", &StrategyParams::slots},
    {"eviction_interval", &StrategyParams::eviction_interval},
    {"decay_exponent", &StrategyParams::decay_exponent},
    {"hit_rate", &StrategyParams::hit_rate},
    {"insert_rate", &StrategyParams::insert_rate},
    {"collision_rate", &StrategyParams::collision_rate},
    {"eviction_rate", &StrategyParams::eviction_rate},
    {"own_row_rate", &StrategyParams::own_row_rate},
    {"module_bytes", &StrategyParams::module_bytes},
    {"steps_approximated", &StrategyParams::steps_approximated},
    {"device_cache_rows", &StrategyParams::device_cache_rows},
    {"host_cache_rows", &StrategyParams::host_cache_rows},
    {"device_hit_rate", &StrategyParams::device_hit_rate},
    {"host_hit_rate", &StrategyParams::host_hit_rate},
    {"ssd_reads_per_step", &StrategyParams::ssd_reads_per_step},
    {"host_fetches_per_step", &StrategyParams::host_fetches_per_step},
    {"row_bytes", &StrategyParams::row_bytes},
    {"host_link_gbs", &StrategyParams::host_link_gbs},
    {"storage", &StrategyParams::storage},
    {"writebacks_per_step", &StrategyParams::writebacks_per_step},
    {"ssd_writes_per_step", &StrategyParams::ssd_writes_per_step},
    {"storage_writes", &StrategyParams::storage_writes},
    {"optimizer", &StrategyParams::optimizer},
    {"optimizer_state_bytes", &StrategyParams::optimizer_state_bytes},
    {"optimizer_why", &StrategyParams::optimizer_why},
    {"ssd_read_us", &StrategyParams::ssd_read_us},
    {"ssd_queue_depth", &StrategyParams::ssd_queue_depth},
    {"apart_from", &StrategyParams::apart_from},
    {"shared_by", &StrategyParams::shared_by},
    {"same_weights_as", &StrategyParams::same_weights_as},
    {"with", &StrategyParams::with},
    {"format", &StrategyParams::format},
    {"gradient", &StrategyParams::gradient},
    {"gradient_rows_per_step", &StrategyParams::gradient_rows_per_step},
    {"gradient_rows_basis", &StrategyParams::gradient_rows_basis},
    {"dense_gradient_bytes", &StrategyParams::dense_gradient_bytes},
    {"sparse_gradient_bytes", &StrategyParams::sparse_gradient_bytes},
    {"optimizer_from", &StrategyParams::optimizer_from},
    {"head", &StrategyParams::head},
    {"head_kind", &StrategyParams::head_kind},
    {"saved_bytes", &StrategyParams::saved_bytes},
    {"saved_weight_bytes", &StrategyParams::saved_weight_bytes},
    {"saved_gradient_bytes", &StrategyParams::saved_gradient_bytes},
    {"saved_optimizer_bytes", &StrategyParams::saved_optimizer_bytes},
    {"saved_head_bytes", &StrategyParams::saved_head_bytes},
    {"saved_logit_bytes_per_step", &StrategyParams::saved_logit_bytes_per_step},
}};

// The JSON key of a field (nullptr for a member that is not in kStrategyParamFields).
template <class T>
const char* param_key(ParamMember<T> field) {
  for (const auto& f : kStrategyParamFields)
    if (const auto* m = std::get_if<ParamMember<T>>(&f.member); m && *m == field) return f.key;
  return nullptr;
}

template <class T, class V>
StrategyParams& StrategyParams::set(std::optional<T> StrategyParams::*field, V&& value) {
  this->*field = T(std::forward<V>(value));
  const std::string key = param_key(field);
  bool listed = false;
  for (const auto& k : order.keys) listed = listed || k == key;
  if (!listed) order.keys.push_back(key);
  return *this;
}

}  // namespace edo::model
