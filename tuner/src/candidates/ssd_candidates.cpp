#include "ssd_candidates.h"

#include <algorithm>
#include <cmath>

#include "cache_policies.h"
#include "edo/model/tune_reasons.h"
#include "cache_replay.h"
#include "ssd_replay.h"

namespace edo::tuner {

using P = model::StrategyParams;

namespace {

uint64_t slots_of(uint64_t cache_rows) { return (cache_rows + kFbgemmWays - 1) / kFbgemmWays * kFbgemmWays; }

// The two eviction buffers of the device cache (training.py:659-729, unified memory on the
// host): each the L1's weights shape, an int64 index and an int32 slot per slot, one int32 count.
uint64_t eviction_buffer_bytes(uint64_t cache_rows, uint64_t row_bytes) { return 2 * (slots_of(cache_rows) * (row_bytes + 8 + 4) + 4); }

// The host cache sizes tried for one device cache size: none (FBGEMM makes no L2 when
// l2_cache_size is 0: kv_db_table_batched_embeddings.cpp:117-118), 4 and 16 times it, and all
// the host budget holds beside the device cache's eviction buffers; below the table's rows.
std::vector<uint64_t> host_cache_sizes(uint64_t l1, uint64_t rows, uint64_t row_bytes, uint64_t host_budget) {
  std::vector<uint64_t> sizes{l1 * 4, l1 * 16};
  if (host_budget > 0) {
    const uint64_t buffers = eviction_buffer_bytes(l1, row_bytes);
    if (host_budget > buffers) sizes.push_back((host_budget - buffers) / row_bytes);
  }
  std::vector<uint64_t> out{0};
  for (uint64_t s : sizes)
    if (s > l1 && s < rows && (host_budget == 0 || s * row_bytes + eviction_buffer_bytes(l1, row_bytes) <= host_budget))
      out.push_back(s);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Slots of a miniature level (SHARDS, cache_policies.h): capacity x the sample's rate, at least
// one when the level has any.
uint64_t mini(uint64_t slots, double rate) {
  return slots == 0 ? 0 : std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(static_cast<double>(slots) * rate)));
}

}  // namespace

std::string ssd_not_offered(const TableGroup& g, const TierBudgets& budgets) {
  const bool over_host = budgets.host > 0 && g.weight_bytes > budgets.host;
  const bool over_device = budgets.ssd > 0 && g.budget_left_bytes && g.weight_bytes > *g.budget_left_bytes;
  if (!over_host && !over_device)
    return budgets.host == 0 && budgets.ssd == 0 ? "no host or SSD budget" : "fits the host budget and what the device budget leaves it";
  if (budgets.ssd > 0 && g.weight_bytes > budgets.ssd) return "larger than the SSD budget";
  if (!g.dense_use.empty()) return "read whole by " + g.dense_use;
  if (!g.members.empty() || !g.identical.empty()) return "shares its weights with another table";
  if (!(g.lookups_per_step > 0) || g.rows < 2 || g.weight_bytes == 0) return "no lookups or rows";
  return "";
}

uint64_t ssd_device_cache_bytes(uint64_t cache_rows, uint64_t row_bytes) {
  const uint64_t slots = slots_of(cache_rows);
  return slots * row_bytes + slots * 8 + slots * 8;
}

double ssd_added_us(double fetches, double reads, uint64_t row_bytes, const SsdLinks& links, std::string& basis) {
  const double link_us = fetches * static_cast<double>(row_bytes) / (links.host_link_gbs * 1e9) * 1e6;
  double ssd_us = 0;
  if (links.storage && links.storage->row_qd32.reads_per_s > 0) {
    ssd_us = reads / links.storage->row_qd32.reads_per_s * 1e6;
    basis = "SSD reads: " + std::to_string(links.storage->row_read_bytes) + "-byte random reads at queue depth 32 measured by " +
            model::command_words().say({.code = model::Reason::kBenchStorage}) + " (" + links.storage_source + ")";
  } else {
    ssd_us = reads * static_cast<double>(row_bytes) / kTorchRecSsdBytesPerS * 1e6;
    basis = "SSD reads: not measured (no storage figures in the device profile; " +
            model::command_words().say({.code = model::Reason::kSaveStorageProfile}) + "): TorchRec's planner default of 100 MiB/s";
  }
  return link_us + ssd_us;
}

std::string ssd_optimizer(const TableGroup& g, std::string& why) {
  why.clear();
  if (g.optimizer == "rowwise_adagrad") return "";
  const std::string job = g.optimizer.empty() ? "an optimizer without state (SGD)" : g.optimizer;
  why = "trained with " + job + " as recorded; TorchRec's KEY_VALUE kernel (FBGEMM's SSD TBE) trains with EXACT_ROWWISE_ADAGRAD, " +
        "PARTIAL_ROWWISE_ADAM or ADAM only and keeps their state on the device for every row (no offloading outside the "
        "zero-collision kernels): row-wise Adagrad's one float per row is the state that fits (fused_params optimizer "
        "EXACT_ROWWISE_ADAGRAD)";
  return "rowwise_adagrad";
}

double ssd_writeback_us(double writebacks, double ssd_writes, uint64_t row_bytes, const SsdLinks& links, std::string& basis) {
  const double bytes = static_cast<double>(row_bytes);
  const double link_us = writebacks * bytes / (links.host_link_gbs * 1e9) * 1e6;
  double ssd_us = 0;
  if (links.storage && links.storage->seq_write_gbs > 0) {
    ssd_us = ssd_writes * bytes / (links.storage->seq_write_gbs * 1e9) * 1e6;
    basis = "SSD writes: sequential write bandwidth measured by " + model::command_words().say({.code = model::Reason::kBenchStorage}) +
            " (" + links.storage_source +
            "; RocksDB writes logs and SST files, not rows in place)";
  } else {
    ssd_us = ssd_writes * bytes / kTorchRecSsdBytesPerS * 1e6;
    basis = "SSD writes: not measured: TorchRec's planner default of 100 MiB/s";
  }
  return link_us + ssd_us;
}

void add_ssd_candidates(const TableGroup& g, const TierBudgets& budgets, const SsdLinks& links, std::vector<Candidate>& out) {
  if (out.empty() || !out.front().baseline || !ssd_not_offered(g, budgets).empty()) return;
  std::string why_not = g.replay_skipped;
  const auto fit = why_not.empty() ? CacheReplay::of(g.counts, why_not) : std::nullopt;
  const auto replay = fit ? PolicyReplay::of(g.counts, g.lookups_per_step, why_not) : std::nullopt;
  if (!fit || !replay) return;
  const uint64_t row_bytes = g.weight_bytes / g.rows;
  const Candidate base = out.front();  // a copy: out grows below (a reference would dangle)
  const bool training = g.optimizer_bytes > 0 || g.grad_bytes > 0;
  std::string optimizer_why;
  const std::string optimizer = training ? ssd_optimizer(g, optimizer_why) : "";
  // Device cache sizes: the LRU sizes fitted on the earlier part (50-99 % hits there); when it
  // shows too little reuse to reach 50 %, the smallest cache FBGEMM makes (one set of 32 ways).
  std::vector<uint64_t> l1_sizes = fit->fitted_cache_rows(g.rows);
  if (l1_sizes.empty()) l1_sizes.push_back(kFbgemmWays);
  for (uint64_t l1 : l1_sizes)
    for (uint64_t l2 : host_cache_sizes(l1, g.rows, row_bytes, budgets.host)) {
      const TwoLevelCount n = replay_two_level(replay->stream(), mini(l1, replay->rate()), mini(l2, replay->rate()));
      if (n.refs == 0) continue;
      const double fetches = g.lookups_per_step * (1 - n.device_rate()), reads = g.lookups_per_step * n.ssd_rate();
      std::string basis, write_basis;
      double added = ssd_added_us(fetches, reads, row_bytes, links, basis);
      const double writebacks = g.lookups_per_step * n.share(n.writebacks), ssd_writes = g.lookups_per_step * n.share(n.ssd_writes);
      if (training) added += ssd_writeback_us(writebacks, ssd_writes, row_bytes, links, write_basis);
      const uint64_t device = ssd_device_cache_bytes(l1, row_bytes);
      Candidate c;
      model::StrategyParams& p = c.params;
      p.set(&P::device_cache_rows, l1).set(&P::host_cache_rows, l2).set(&P::device_hit_rate, n.device_rate());
      p.set(&P::host_hit_rate, n.host_rate()).set(&P::ssd_reads_per_step, reads).set(&P::host_fetches_per_step, fetches);
      p.set(&P::row_bytes, row_bytes).set(&P::host_link_gbs, links.host_link_gbs).set(&P::storage, basis).set(&P::cache_policy, "lru");
      p.set(&P::heldout, model::HeldOutReplay{CacheReplay::kFitFraction, replay->rate(), {}, {}, n.refs});
      if (training) {
        p.set(&P::writebacks_per_step, writebacks).set(&P::ssd_writes_per_step, ssd_writes).set(&P::storage_writes, write_basis);
        p.set(&P::optimizer, "rowwise_adagrad").set(&P::optimizer_state_bytes, ssd_optimizer_state_bytes(g.rows));
        if (!optimizer_why.empty()) p.set(&P::optimizer_why, optimizer_why);
      }
      if (links.storage) p.set(&P::ssd_read_us, 1e6 / links.storage->row_qd32.reads_per_s).set(&P::ssd_queue_depth, 32);
      c.strategy = "ssd";
      c.spec = base.spec;
      c.kernel = base.kernel;
      c.level = 0;
      c.measure_as = 0;  // the lookups are the baseline's, served from the device cache
      c.added_us = added;
      c.heldout_hit_rate = n.device_rate();
      c.cache_rows = l1;
      c.optimizer = optimizer;
      c.needs_retraining = !optimizer.empty();  // as the optimizer-state lever: another optimizer
      // Device: the L1 and its metadata (and a trained table's row-wise Adagrad state). Host: the L2's rows (CacheLib items of the row's
      // bytes, kv_db_table_batched_embeddings.cpp:108-116; its own bookkeeping not counted) and
      // the L1's eviction buffers. SSD: the whole table.
      c.device_bytes = device + (training ? ssd_optimizer_state_bytes(g.rows) : 0);
      c.host_bytes = l2 * row_bytes + eviction_buffer_bytes(l1, row_bytes);
      c.ssd_bytes = g.weight_bytes;
      out.push_back(std::move(c));
    }
}

}  // namespace edo::tuner
