#include "support/report/report_json.h"

#include <cmath>

#include "edo/model/processes.h"
#include "edo/model/training.h"
#include "support/report/report_llm.h"
#include "support/report/report_union.h"

namespace edo::cli {

using json = nlohmann::ordered_json;

namespace {
// NaN/inf are not JSON: write null instead.
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json loss_value(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

json losses_json(const std::vector<model::StepLoss>& losses) {
  if (losses.empty()) return nullptr;
  const model::LossSummary s = model::summarize_losses(losses);
  const auto point = [](const model::StepLoss& l) { return json{{"step", l.step}, {"loss", loss_value(l.loss)}}; };
  return {{"steps_with_loss", s.count},
          {"first", point(*s.first)},
          {"last", point(*s.last)},
          {"final", loss_value(s.final_loss)},
          {"final_of", s.final_count},
          {"first_nonfinite_step", s.first_nonfinite ? json(s.first_nonfinite->step) : json(nullptr)}};
}

json optimizer_json(const std::optional<model::OptimizerParams>& o) {
  if (!o) return nullptr;
  return {{"kind", o->kind},
          {"lr", number_or_null(o->lr)},
          {"eps", number_or_null(o->eps)},
          {"weight_decay", number_or_null(o->weight_decay)},
          {"betas", json::array({number_or_null(o->beta1), number_or_null(o->beta2)})},
          {"momentum", number_or_null(o->momentum)},
          {"initial_accumulator_value", number_or_null(o->initial_accumulator_value)},
          {"maximize", o->maximize}};
}

json session_json(const model::Session& s) {
  json j = {{"id", s.id},
            {"command", s.command},
            {"host", s.host},
            {"pid", s.pid},
            {"parent_pid", s.parent_pid},
            {"start_unix_ns", s.start_unix_ns},
            {"duration_s", static_cast<double>(s.duration_ns) / 1e9},
            {"gpus", s.gpus},
            {"source", s.source},
            {"steps", s.steps},
            {"dropped_events", s.dropped_events},
            {"drops", s.drops}};
  j["rank"] = s.rank ? json(*s.rank) : json(nullptr);
  j["local_rank"] = s.local_rank ? json(*s.local_rank) : json(nullptr);
  j["exit_code"] = s.exit_code ? json(*s.exit_code) : json(nullptr);
  // Where the process sits in a distributed job (the launcher's environment; null when unset).
  j["world_size"] = s.identity.world_size ? json(*s.identity.world_size) : json(nullptr);
  j["group_rank"] = s.identity.group_rank ? json(*s.identity.group_rank) : json(nullptr);
  j["job_id"] = s.identity.job_id.empty() ? json(nullptr) : json(s.identity.job_id);
  j["master"] = s.identity.master.empty() ? json(nullptr) : json(s.identity.master);
  j["clock_shift_ns"] = s.identity.clock_shift_ns;
  j["losses"] = losses_json(s.losses);  // the training loss the hooks saw, summarised; null: none
  return j;
}

json table_json(const model::TableView& t, size_t top_rows) {
  const stats::TableSummary& s = t.summary;
  json lru = json::array();
  for (const auto& p : s.lru_curve) lru.push_back({static_cast<uint64_t>(std::llround(p.x)), p.y});
  json j = {{"name", t.name},
            {"table_name", t.table_name},
            {"rows", t.rows},
            {"dim", t.dim},
            {"dtype", t.dtype},
            {"device", t.device},
            {"weight_bytes", t.weight_bytes},
            {"optimizer_bytes", t.optimizer_bytes},
            {"grad_bytes", t.grad_bytes},
            {"total_bytes", t.total_bytes()},
            {"sessions", t.sessions},
            {"ranks", t.ranks},
            {"lookups", s.lookups},
            {"unique_rows", s.unique_rows},
            {"out_of_range", t.aggregate.out_of_range()},
            {"counts", s.mode == stats::CountMode::kExact ? "exact" : "sketch"},
            {"zipf_alpha", s.zipf.valid ? number_or_null(s.zipf.alpha) : json(nullptr)},
            {"zipf_fit_error", s.zipf.valid ? number_or_null(s.zipf.fit_error) : json(nullptr)},
            {"coverage",
             {{"top_0.1pct", s.coverage_top_0_1pct}, {"top_1pct", s.coverage_top_1pct}, {"top_10pct", s.coverage_top_10pct}}},
            {"lru_hit_rate", lru},
            {"lru_hit_rate_at",
             {{"1pct", s.lru_hit_rate_1pct}, {"10pct", s.lru_hit_rate_10pct}, {"50pct", s.lru_hit_rate_50pct},
              {"100pct", s.lru_hit_rate_100pct}}},
            // Read on several ranks: one cache for the union of their lookups (model parallel);
            // the curve above is each rank with its own cache (data parallel). null otherwise.
            {"lru_union", union_lru_json(t)},
            {"drift_mean_jaccard", number_or_null(s.mean_drift_jaccard)},
            {"tied_with", t.tied_with}};
  j["shares_weights_of"] = t.shares_weights_of.empty() ? json(nullptr) : json(t.shares_weights_of);
  // The job's optimizer for the table and what read its weight whole (null: not recorded).
  j["optimizer_params"] = optimizer_json(t.optimizer_params);
  j["dense_use"] = t.dense_use.empty() ? json(nullptr) : json(t.dense_use);
  // A tied table that read nothing itself: its module's reads are counted in the owner table.
  j["lookups_counted_in"] =
      !t.shares_weights_of.empty() && s.lookups == 0 ? json(t.shares_weights_of) : json(nullptr);
  if (top_rows > 0) {
    json top = json::array();
    for (const auto& [row, count] : t.aggregate.top_rows(top_rows)) top.push_back({row, count});
    j["top_rows"] = top;
  }
  return j;
}

json job_json(const model::Profile& profile, const model::JobView& job) {
  json ranks = json::array();
  for (size_t i : job.ranks) ranks.push_back(session_json(profile.sessions[i]));
  json j = {{"command", job.command}, {"host", job.host}, {"start_unix_ns", job.start_unix_ns},
            {"duration_s", static_cast<double>(job.duration_ns) / 1e9}, {"steps", job.steps}};
  j["pid"] = job.pid ? json(*job.pid) : json(nullptr);
  j["exit_code"] = job.exit_code ? json(*job.exit_code) : json(nullptr);
  j["processes"] = profile.sessions.size();
  j["ranks"] = ranks;
  j["forked_workers"] = job.count(model::Role::kWorker);
  j["other_children"] = job.count(model::Role::kChild);
  return j;
}

json report_json(const model::Profile& profile, const std::vector<model::TableView>& tables, size_t top_rows) {
  json j;
  const model::JobView job = model::job_view(profile);
  j["schema"] = "edo.report/2";
  j["job"] = job_json(profile, job);
  // "session": the job's root process (before: whichever process connected first).
  const size_t head = job.root >= 0 ? size_t(job.root) : 0;
  j["session"] = profile.sessions.empty() ? json::object() : session_json(profile.sessions[head]);
  json sessions = json::array();
  for (size_t i = 0; i < profile.sessions.size(); ++i) {
    json sj = session_json(profile.sessions[i]);
    sj["role"] = model::role_name(job.roles[i]);
    sessions.push_back(sj);
  }
  j["sessions"] = sessions;
  const model::TableMemory mem = profile.table_memory();
  j["memory"] = {{"peak_bytes", profile.peak_bytes()},
                 {"table_bytes", mem.total_bytes()},
                 {"weight_bytes", mem.weight_bytes},
                 {"optimizer_bytes", mem.optimizer_bytes},
                 {"grad_bytes", mem.grad_bytes},
                 {"timeline_events", profile.memory_events.size()},
                 // edo's own (the tracer's cuMemAlloc / cuMemHostAlloc), not in the figures above
                 {"edo_device_bytes", profile.edo_device_bytes()},
                 {"edo_pinned_bytes", profile.edo_pinned_bytes()}};
  json tj = json::array();
  for (const auto& t : tables) {
    tj.push_back(table_json(t, top_rows));
    add_llm_json(profile, t, tj.back());  // activation memory, LM head (support/report/report_llm.h)
  }
  j["tables"] = tj;
  // The LM heads' memory (not in table_bytes: a head is not a table) and the tables' activations.
  j["memory"]["lm_head_bytes"] = lm_head_bytes(profile, tables);
  j["memory"]["activation_peak_bytes"] = activation_peak_bytes(profile, tables);
  json ranges = json::array();
  for (const auto& r : profile.ranges) {
    ranges.push_back({{"session_id", r.session_id}, {"name", r.name}, {"count", r.count}, {"total_ns", r.total_ns},
                      {"lookups", r.lookups}, {"alloc_bytes", r.alloc_bytes}});
  }
  j["ranges"] = ranges;
  json kernels = json::array();
  for (const auto& k : profile.kernels) {
    json per_table = json::array();
    for (const auto& t : k.per_table)
      per_table.push_back({{"table", t.table}, {"launches", t.launches}, {"total_ns", t.total_ns}});
    kernels.push_back({{"session_id", k.session_id}, {"name", k.name}, {"launches", k.launches},
                       {"total_ns", k.total_ns}, {"tables", k.tables}, {"per_table", per_table}});
  }
  j["kernels"] = kernels;
  j["dropped_events"] = profile.dropped_events();
  j["drops"] = profile.drops();  // every loss counter by name, summed over sessions (docs/losses.md)
  return j;
}

}  // namespace edo::cli
