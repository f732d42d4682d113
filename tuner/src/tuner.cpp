// tune(): enumerate every group's candidates, measure them level by level (every table's
// baseline first, then the cheap formats, then the rest) within the time limit, then plan.
#include "edo/tuner/tuner.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <set>

#include "candidates.h"
#include "edo/kernels/cpu.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/encode.h"
#include "edo/tuner/duration.h"
#include "edo/tuner/optimizer.h"
#include "measure.h"
#include "workload.h"

namespace edo::tuner {

std::string resolve_backend(const std::string& requested) {
  if (requested == "cpu" || requested == "cuda") return requested;
  if (requested == "auto") return kernels::cuda::device_status().empty() ? "cuda" : "cpu";
  throw std::invalid_argument("backend '" + requested + "' is not auto, cuda or cpu");
}

std::string describe_backend(const std::string& backend) {
  if (backend == "cuda") return kernels::cuda::device_description();
  std::string model;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  if (model.empty()) model = "unknown CPU";
  return model + ", " + std::to_string(kernels::num_threads()) + " threads, " + kernels::cpu::isa();
}

namespace {

using clock = std::chrono::steady_clock;

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    uint64_t kb = 0;
    in >> kb;
    if (key == "MemAvailable:") return kb * 1024;
    in.ignore(256, '\n');
  }
  struct sysinfo si{};
  if (sysinfo(&si) == 0) return static_cast<uint64_t>(si.freeram) * si.mem_unit;
  return uint64_t{4} << 30;
}

// The fp32 bytes one measured table may take: an eighth of available host memory (the
// source weights and an encoded copy live on the host during a measurement), at most 256 MiB
// on the CPU backend (many times any CPU cache: the tail of the lookups still misses) and
// 1 GiB on a GPU (many times its L2), at least 64 MiB.
uint64_t default_cap(const std::string& backend) {
  const uint64_t host = available_memory() / 8;
  const uint64_t most = backend == "cuda" ? uint64_t{1} << 30 : uint64_t{256} << 20;
  return std::max<uint64_t>(uint64_t{64} << 20, std::min(host, most));
}

FormatSize kernels_size(const std::string& spec, uint64_t rows, uint32_t dim, uint64_t kept) {
  const auto s = kernels::strategy_size(kernels::StrategySpec::parse(spec), rows, dim, nullptr);
  FormatSize f{s.device_bytes, s.host_bytes};
  if (kernels::StrategySpec::parse(spec).name == "pruned" && kept < rows) {
    // Without counts every row is kept; a pruned table stores kept rows of dim fp32 values.
    f.device_bytes -= (rows - kept) * uint64_t{dim} * 4;
  }
  return f;
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * x);
  return buf;
}

std::string number(double x, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string bytes_text(uint64_t b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int i = 0;
  while (v >= 1024 && i < 5) {
    v /= 1024;
    ++i;
  }
  return i ? number(v, "%.1f") + " " + u[i] : std::to_string(b) + " B";
}

// What the candidate is, in words.
std::string describe(const model::TuneCandidate& c, uint64_t rows) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  auto get = [&](const char* k) -> double { return p.is_object() && p.contains(k) && p[k].is_number() ? p[k].get<double>() : 0.0; };
  std::string s;
  if (c.strategy == "offload") {
    const double k = get("cache_rows");
    s = "offload to host with a device cache of " + number(k, "%.0f") + " rows (" +
        number(100.0 * k / std::max<double>(1, static_cast<double>(rows)), "%.2g") + "% of rows, " +
        (p.is_object() && p.value("policy", "") == "static" ? "static hot set" : "LRU") + ")";
  } else if (c.strategy == "pq") {
    s = "product quantisation, " + number(get("m"), "%.0f") + " sub-spaces";
  } else if (c.strategy == "lowrank") {
    s = "low rank " + number(get("rank"), "%.0f");
  } else if (c.strategy == "multihash") {
    s = "multi-hash into " + number(get("buckets"), "%.0f") + " buckets";
  } else if (c.strategy == "qr") {
    s = "quotient-remainder, " + number(get("m"), "%.0f") + " rows per quotient";
  } else if (c.strategy == "pruned") {
    s = "pruned to the " + number(get("kept_rows"), "%.0f") + " rows read";
  } else {
    s = c.strategy;
  }
  if (c.optimizer == "rowwise_adagrad") s += ", row-wise Adagrad with sparse gradients";
  if (p.is_object() && p.contains("shared_by") && p["shared_by"].is_array()) {
    std::string names;
    for (const auto& n : p["shared_by"])
      if (n.is_string()) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    s += ", one copy shared with " + names + " (same weights)";
  }
  return s;
}

// Why the plan took candidate `ci` for table `t`: what it is, what it saves and costs
// against the baseline, its error against the limit, and what kept the others out (faster
// ones need more memory than the budget leaves: the plan is the fastest that fits; the rest
// are over the error limit).
std::string why_of(const model::TuneResult& r, size_t ci, const model::TuneCandidate* base, const model::TuneTable& t,
                   double max_error) {
  const model::TuneCandidate& c = r.candidates[ci];
  const std::string limit = std::isfinite(max_error) ? " (limit " + number(max_error, "%g") + ")" : "";
  std::string s;
  if (!base || &c == base) {
    s = "kept as recorded (" + c.strategy + ")";
  } else {
    s = describe(c, t.rows) + ": ";
    const double saved = static_cast<double>(base->device_bytes) - static_cast<double>(c.device_bytes);
    s += saved >= 0 ? "saves " + bytes_text(static_cast<uint64_t>(saved)) : "adds " + bytes_text(static_cast<uint64_t>(-saved));
    if (base->device_bytes > 0) s += " (" + percent(std::fabs(saved) / static_cast<double>(base->device_bytes)) + ")";
    const double dt = c.step_us - base->step_us;
    s += ", step time " + format_duration_us(dt, true);
    if (base->step_us > 0) s += " (" + number(100.0 * dt / base->step_us, "%+.0f") + "%)";
    s += ", error " + number(c.error, "%.3g") + limit;
  }
  if (c.hit_rate) {
    s += ", hit rate " + percent(*c.hit_rate) + " measured";
    if (c.recorded_hit_rate) s += " (" + percent(*c.recorded_hit_rate) + " recorded)";
  }
  if (c.needs_retraining) s += "; needs retraining";
  size_t faster = 0, over = 0;
  const model::TuneCandidate* closest = nullptr;  // over the limit, least error
  for (const auto& o : r.candidates) {
    if (o.table != c.table || &o == &c) continue;
    if (!std::isnan(o.error) && o.error > max_error) {
      ++over;
      if (!closest || o.error < closest->error) closest = &o;
    } else if (o.usable() && o.step_us < c.step_us) {
      ++faster;
    }
  }
  if (faster) s += "; " + std::to_string(faster) + " faster need more memory than the budget leaves";
  else if (!base || &c == base) s += ": the fastest measured";
  else s += "; the fastest measured" + std::string(over ? " within the error limit" : "");
  if (over)
    s += "; " + std::to_string(over) + " over the error limit (closest: " + closest->strategy + ", error " +
         number(closest->error, "%.3g") + ")";
  return s;
}

struct BenchCache {
  uint64_t budget;
  std::list<std::pair<size_t, std::unique_ptr<TableBench>>> items;  // most recent first
  uint64_t bytes = 0;
  TableBench* get(size_t group) {
    for (auto it = items.begin(); it != items.end(); ++it)
      if (it->first == group) {
        items.splice(items.begin(), items, it);
        return items.front().second.get();
      }
    return nullptr;
  }
  bool has(size_t group) const {
    for (const auto& [g, b] : items)
      if (g == group) return true;
    return false;
  }
  TableBench* put(size_t group, std::unique_ptr<TableBench> b) {
    bytes += b->bytes();
    items.emplace_front(group, std::move(b));
    while (items.size() > 1 && bytes > budget) {
      bytes -= items.back().second->bytes();
      items.pop_back();
    }
    return items.front().second.get();
  }
  void make_room_for(uint64_t b) {
    while (!items.empty() && bytes + b > budget) {
      bytes -= items.back().second->bytes();
      items.pop_back();
    }
  }
};

}  // namespace

model::TuneResult tune(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                       const TuneOptions& o, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const auto t0 = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  if (!(o.max_error >= 0)) throw std::invalid_argument("max error must be a number >= 0");
  if (o.reps < 1 || o.batches < 1 || o.warmup < 0) throw std::invalid_argument("reps and batches must be >= 1");
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  model::TuneResult r;
  r.created_unix = static_cast<int64_t>(std::time(nullptr));
  r.backend = resolve_backend(o.backend);
  std::unique_ptr<kernels::Backend> backend;
  try {
    backend = kernels::make_backend(r.backend);
  } catch (const std::runtime_error& e) {
    throw TuneError(std::string(e.what()) + "; use --backend cpu (or auto) on this machine");
  }
  r.device = describe_backend(r.backend);
  r.budget_bytes = o.budget_bytes;
  r.max_error = o.max_error;
  r.tables_glob = o.tables;
  r.seed = o.seed;
  r.time_limit_s = o.time_limit_s;

  std::set<std::string> allowed;
  {
    size_t start = 0;
    while (start < o.strategies.size()) {
      size_t end = o.strategies.find(',', start);
      if (end == std::string::npos) end = o.strategies.size();
      std::string name = o.strategies.substr(start, end - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      const auto& known = kernels::strategy_names();
      if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end()) {
        std::string all;
        for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
        throw std::invalid_argument("unknown strategy '" + name + "' (known: " + all + ")");
      }
      if (!name.empty()) allowed.insert(name);
      start = end + 1;
    }
  }
  Workload w = build_workload(profile, snapshots, o.tables);
  r.notes = w.notes;
  bool any_tuned = false;
  for (const auto& g : w.groups) any_tuned = any_tuned || g.tuned;
  if (!any_tuned) {
    std::string names;
    for (size_t i = 0; i < w.groups.size() && i < 5; ++i) names += (i ? ", " : "") + w.groups[i].name;
    if (w.groups.empty()) throw TuneError("the recording has no embedding tables to tune");
    throw TuneError("no table matches --tables '" + o.tables + "' (tables: " + names + (w.groups.size() > 5 ? ", ..." : "") + ")");
  }

  // Candidates of every tuned group.
  std::vector<std::vector<Candidate>> cands(w.groups.size());
  std::vector<std::vector<size_t>> index(w.groups.size());  // group, candidate -> result index
  size_t with_snapshot = 0, tuned = 0;
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    TableGroup& g = w.groups[gi];
    if (g.tuned && baseline_spec(g.dtype).empty()) {
      g.tuned = false;
      r.notes.push_back(g.name + " is stored as " + g.dtype + " (quantised by the job): kept as recorded");
    }
    const std::string weights = g.snapshot ? "recorded" : "synthetic";
    auto add_table = [&](const std::string& name, double lookups, const std::string& owner) {
      model::TuneTable t;
      t.name = name;
      t.rows = g.rows;
      t.dim = g.dim;
      t.dtype = g.dtype;
      t.device_bytes = owner.empty() ? g.recorded_device_bytes() : 0;
      t.lookups_per_step = lookups;
      t.tuned = g.tuned;
      t.shares_with = owner;
      t.weights = weights;
      t.optimizer = g.optimizer;
      r.tables.push_back(std::move(t));
    };
    for (size_t k = 0; k < g.lookups_by_name.size(); ++k)
      add_table(g.lookups_by_name[k].first, g.lookups_by_name[k].second, k == 0 ? "" : g.name);
    if (!g.tuned) continue;
    ++tuned;
    with_snapshot += g.snapshot != nullptr;
    cands[gi] = enumerate_candidates(g, kernels_size);
    if (!allowed.empty()) {
      // Keep the baseline format (for identical tables also its shared copy) and the allowed
      // strategies; variants point at their format by index.
      std::vector<Candidate> kept;
      std::map<int, int> moved;
      const std::string base = cands[gi].empty() ? "" : cands[gi].front().strategy;
      for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
        const Candidate& c = cands[gi][ci];
        if (!c.baseline && c.strategy != base && !allowed.count(c.strategy)) continue;
        moved[static_cast<int>(ci)] = static_cast<int>(kept.size());
        kept.push_back(c);
        if (kept.back().measure_as >= 0) kept.back().measure_as = moved.at(kept.back().measure_as);
      }
      cands[gi] = std::move(kept);
    }
    for (const Candidate& c : cands[gi]) {
      model::TuneCandidate m;
      m.table = g.name;
      m.strategy = c.strategy;
      m.spec = c.spec;
      m.params_json = c.params_json;
      m.optimizer = c.optimizer;
      m.device_bytes = c.device_bytes;
      m.host_bytes = c.host_bytes;
      m.recorded_hit_rate = c.recorded_hit_rate;
      m.needs_retraining = c.needs_retraining;
      index[gi].push_back(r.candidates.size());
      r.candidates.push_back(std::move(m));
    }
  }
  r.weights = with_snapshot == tuned ? "recorded" : "synthetic";
  if (with_snapshot == 0)
    r.notes.push_back("weights: synthetic (no weight snapshot recorded; record with 'edo record --weights' for errors on the job's weights)");
  else if (with_snapshot < tuned)
    r.notes.push_back("weights: recorded for " + std::to_string(with_snapshot) + " of " + std::to_string(tuned) +
                      " tables, synthetic for the others (see each table's weights)");
  if (r.backend == "cpu")
    r.notes.push_back("measured on the CPU: times are this CPU's; an offloaded table costs its baseline's lookups plus its "
                      "misses' transfer over a modelled 25 GB/s host link");
  if (o.max_error == kDefaultMaxError)
    r.notes.push_back("max error " + number(kDefaultMaxError, "%g") +
                      " per table is the default (fp16, bf16 and int8 usually pass, fp8, int4, PQ, low rank and hashing "
                      "do not): --max-error E to change it, --max-error inf for no limit");
  r.candidates_total = r.candidates.size();

  // Measurement, level by level.
  const uint64_t cap = o.measure_bytes ? o.measure_bytes : default_cap(r.backend);
  // Measurement setups kept for the next level: a quarter of available memory, room for two
  // of the largest at least; on a GPU at most four (each holds its baseline on the device).
  uint64_t keep = std::max(4 * cap + (uint64_t{64} << 20), available_memory() / 4);
  if (r.backend == "cuda") keep = std::min(keep, 8 * cap + (uint64_t{64} << 20));
  BenchCache benches{keep, {}, 0};
  // What measuring costs, to skip what would not finish in time: per strategy the seconds it
  // took on the largest table measured so far (elements = measured rows x dim); per group the
  // seconds its measurement setup took (paid again if its setup was evicted).
  std::map<std::string, std::pair<double, double>> cost;  // strategy -> (elements, seconds)
  std::vector<double> setup_s(w.groups.size(), -1), baseline_s(w.groups.size(), -1);
  // A setup is about linear in the measured elements (weights, permutation, batches): a group
  // never set up is predicted from the largest setup so far.
  std::pair<double, double> setup_cost{0, 0};  // (elements, seconds)
  auto predict_setup = [&](size_t gi, double elems) {
    if (benches.has(gi)) return 0.0;
    if (setup_s[gi] >= 0) return setup_s[gi];
    return setup_cost.first > 0 ? setup_cost.second * elems / setup_cost.first : 0.0;
  };
  auto predict = [&](const Candidate& c, size_t gi, double elems) {
    auto it = cost.find(c.strategy);
    if (it != cost.end()) return it->second.second * std::max(1.0, elems / it->second.first);
    // Not measured yet: a multiple of this table's baseline (encoders that fit the table
    // cost more than ones that convert rows).
    const bool fitted = c.strategy == "pq" || c.strategy == "lowrank" || c.strategy == "multihash" || c.strategy == "qr";
    return baseline_s[gi] >= 0 ? baseline_s[gi] * (fitted ? 6.0 : 1.5) : 0.0;
  };
  uint64_t done = 0;
  std::string stop;
  int max_level = 0;
  for (const auto& cs : cands)
    for (const auto& c : cs) max_level = std::max(max_level, c.level);
  auto report = [&](const std::string& table, const std::string& cand) {
    if (!progress) return;
    TuneProgress p;
    p.done = done;
    p.total = r.candidates_total;
    p.elapsed_s = elapsed();
    if (done > 0) {
      const double est = p.elapsed_s / static_cast<double>(done) * static_cast<double>(p.total - done);
      p.remaining_s = o.time_limit_s > 0 ? std::min(est, std::max(0.0, o.time_limit_s - p.elapsed_s)) : est;
    }
    p.table = table;
    p.candidate = cand;
    progress(p);
  };
  report("", "");
  const bool gate = std::isfinite(o.max_error);
  for (int level = 0; level <= max_level; ++level) {
    // Within a level, tables by size, those whose setup is still in memory first (a setup is
    // as costly as a few measurements; more tables than the cache holds would pay it at every
    // level otherwise).
    std::vector<size_t> order(w.groups.size());
    for (size_t gi = 0; gi < order.size(); ++gi) order[gi] = gi;
    std::stable_partition(order.begin(), order.end(), [&](size_t gi) { return benches.has(gi); });
    for (size_t gi : order) {
      const TableGroup& g = w.groups[gi];
      for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
        const Candidate& c = cands[gi][ci];
        if (c.level != level || c.measure_as >= 0) continue;
        model::TuneCandidate& m = r.candidates[index[gi][ci]];
        if (stop.empty() && cancel && cancel->load()) stop = "cancelled";
        if (stop.empty() && o.time_limit_s > 0 && elapsed() >= o.time_limit_s) stop = "time limit";
        if (!stop.empty()) {
          m.note = "not measured: " + stop;
          ++done;
          continue;
        }
        const uint64_t rows = measured_rows(g.rows, g.dim, cap);
        const double elems = static_cast<double>(rows) * g.dim;
        auto too_late = [&](double need) { return o.time_limit_s > 0 && elapsed() + need > o.time_limit_s; };
        const bool gated = gate && !lossless(c.strategy, c.baseline);
        // Skip what would not finish in time (a gated candidate may end at its cheap error
        // check: only its setup must fit).
        if (too_late(predict_setup(gi, elems) + (gated ? 0.0 : predict(c, gi, elems)))) {
          m.note = "not measured: would not finish within the time limit";
          ++done;
          continue;
        }
        report(g.name, c.spec);
        const auto ts = clock::now();
        try {
          TableBench* b = benches.get(gi);
          if (!b) {
            benches.make_room_for(rows * g.dim * 4);
            b = benches.put(gi, std::make_unique<TableBench>(g, o, cap, o.seed ^ fnv1a(g.name)));
            setup_s[gi] = std::chrono::duration<double>(clock::now() - ts).count();
            if (elems >= setup_cost.first) setup_cost = {elems, setup_s[gi]};
          }
          if (gated) {
            // The error gate: the error on the reference rows first; what is clearly over the
            // limit is neither encoded in full nor timed.
            const double e = b->reference_error(c, o);
            const bool exact = row_format(c.strategy);
            if (e > gate_margin(c.strategy) * o.max_error) {
              m.error = e;
              m.note = std::string("not timed: error ") + (exact ? "" : "about ") + number(e, "%.3g") +
                       (exact ? "" : " (on the reference rows)") + ", over --max-error " + number(o.max_error, "%g");
              ++done;
              report(g.name, c.spec);
              continue;
            }
            if (too_late(predict(c, gi, elems))) {
              m.note = "not measured: would not finish within the time limit";
              ++done;
              continue;
            }
          }
          const auto& base = r.candidates[index[gi][0]];
          const double base_us = base.usable() ? base.step_us : std::numeric_limits<double>::quiet_NaN();
          const auto tm = clock::now();
          const Measurement x = b->measure(c, *backend, o, base_us);
          m.step_us = x.step_us;
          m.error = x.error;
          m.hit_rate = x.hit_rate;
          m.measured_rows = x.measured_rows;
          m.measured = true;
          m.note = x.note;
          const double took = std::chrono::duration<double>(clock::now() - tm).count();
          if (c.baseline) baseline_s[gi] = took;
          auto& k = cost[c.strategy];
          if (elems >= k.first) k = {elems, std::max(took, elems == k.first ? k.second : 0.0)};
        } catch (const std::bad_alloc&) {
          m.note = "not measured: does not fit in memory at " + std::to_string(rows) + " rows (lower --measure-bytes)";
        } catch (const std::exception& e) {
          m.note = std::string("not measured: ") + e.what();
        }
        ++done;
        report(g.name, c.spec);
      }
    }
  }
  // Variants (the optimizer lever) share their format's measurement.
  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    for (size_t ci = 0; ci < cands[gi].size(); ++ci) {
      const int from = cands[gi][ci].measure_as;
      if (from < 0) continue;
      model::TuneCandidate& m = r.candidates[index[gi][ci]];
      const model::TuneCandidate& src = r.candidates[index[gi][static_cast<size_t>(from)]];
      m.step_us = src.step_us;
      m.error = src.error;
      m.hit_rate = src.hit_rate;
      m.measured = src.measured;
      m.measured_rows = src.measured_rows;
      m.note = src.note;
      ++done;
    }
  size_t gated = 0;
  for (const auto& m : r.candidates) gated += m.note.rfind("not timed: error", 0) == 0;
  if (gated)
    r.notes.push_back(std::to_string(gated) + " candidate(s) over the error limit were not timed (their error is kept); "
                      "a larger --max-error times them");
  for (const auto& m : r.candidates) r.candidates_measured += m.usable();
  r.complete = stop.empty();
  bool skipped = false;
  for (const auto& m : r.candidates) skipped = skipped || m.note == "not measured: would not finish within the time limit";
  r.stop_reason = stop.empty() && skipped && o.time_limit_s > 0 ? "time limit" : stop;
  if (!r.stop_reason.empty()) r.complete = false;
  report("", "");
  replan(r, o.budget_bytes, o.max_error);
  r.elapsed_s = elapsed();
  return r;
}

void replan(model::TuneResult& r, uint64_t budget, double max_error) {
  r.budget_bytes = budget;
  r.max_error = max_error;
  r.choices.clear();
  r.frontier.clear();
  r.feasible = false;
  // One item per tuned owner with a measured baseline; the rest is fixed memory.
  std::vector<PlanItem> items;
  std::vector<size_t> item_table;
  uint64_t fixed = 0;
  r.baseline_device_bytes = 0;
  r.baseline_host_bytes = 0;
  r.baseline_step_us = 0;
  std::map<std::string, const model::TuneCandidate*> baseline_of;
  for (const auto& c : r.candidates) baseline_of.emplace(c.table, &c);  // a table's first candidate is its baseline
  for (size_t ti = 0; ti < r.tables.size(); ++ti) {
    const model::TuneTable& t = r.tables[ti];
    if (!t.shares_with.empty()) continue;
    r.baseline_device_bytes += t.device_bytes;
    PlanItem item;
    if (t.tuned)
      for (size_t ci = 0; ci < r.candidates.size(); ++ci) {
        const auto& c = r.candidates[ci];
        if (c.table == t.name && c.usable() && c.error <= max_error) item.options.push_back({c.device_bytes, c.host_bytes, c.step_us, ci});
      }
    auto base = baseline_of.find(t.name);
    const bool measured_baseline = t.tuned && base != baseline_of.end() && base->second->usable();
    if (!t.tuned || !measured_baseline) {
      fixed += t.device_bytes;
      continue;
    }
    r.baseline_step_us += base->second->step_us;
    r.baseline_host_bytes += base->second->host_bytes;
    items.push_back(std::move(item));
    item_table.push_back(ti);
  }
  const uint64_t room = budget > fixed ? budget - fixed : 0;
  Solution sol = solve_plan(items, room);
  for (const auto& [b, us] : sol.frontier) r.frontier.emplace_back(b + fixed, us);
  r.min_feasible_bytes = sol.min_feasible_bytes == UINT64_MAX ? UINT64_MAX : sol.min_feasible_bytes + fixed;
  if (!sol.feasible || fixed > budget) {
    r.plan_device_bytes = r.plan_host_bytes = 0;
    r.plan_step_us = 0;
    return;
  }
  r.feasible = true;
  r.plan_device_bytes = sol.device_bytes + fixed;
  r.plan_host_bytes = sol.host_bytes;
  r.plan_step_us = sol.step_us;
  std::map<std::string, size_t> chosen;  // owner -> candidate index
  for (size_t k = 0; k < items.size(); ++k) chosen[r.tables[item_table[k]].name] = sol.chosen[k];
  // Lookups per step of each group (owner and members), to split a group's time.
  std::map<std::string, double> group_lookups;
  for (const auto& t : r.tables) group_lookups[t.shares_with.empty() ? t.name : t.shares_with] += t.lookups_per_step;
  // Identical (untied) tables kept apart by the chosen candidate: owner -> their names.
  std::map<std::string, std::vector<std::string>> apart;
  for (const auto& [owner, ci] : chosen) {
    const auto p = nlohmann::json::parse(r.candidates[ci].params_json.empty() ? "{}" : r.candidates[ci].params_json, nullptr, false);
    if (p.is_object() && p.contains("apart_from") && p["apart_from"].is_array())
      for (const auto& n : p["apart_from"])
        if (n.is_string()) apart[owner].push_back(n.get<std::string>());
  }
  auto own_bytes = [&](const model::TuneTable& t) { return t.rows * t.dim * uint64_t{model::dtype_size(t.dtype)}; };
  for (const auto& t : r.tables) {
    model::TuneChoice ch;
    ch.table = t.name;
    ch.shares_with = t.shares_with;
    const std::string owner = t.shares_with.empty() ? t.name : t.shares_with;
    auto it = chosen.find(owner);
    if (it == chosen.end()) {
      ch.device_bytes = t.device_bytes;
      ch.why = !t.tuned ? "not tuned (outside --tables or not encodable): kept as recorded"
                        : "kept as recorded: its baseline was not measured (stopped early)";
      if (!t.shares_with.empty()) ch.why = "tied to " + t.shares_with + ": shares its weights, kept as recorded";
      r.choices.push_back(std::move(ch));
      continue;
    }
    const model::TuneCandidate& c = r.candidates[it->second];
    ch.candidate = static_cast<int64_t>(it->second);
    const double share = group_lookups[owner] > 0 ? t.lookups_per_step / group_lookups[owner]
                                                  : (t.shares_with.empty() ? 1.0 : 0.0);
    ch.step_us = c.step_us * share;
    const auto& kept_apart = apart[owner];
    const bool is_apart = std::find(kept_apart.begin(), kept_apart.end(), t.name) != kept_apart.end();
    if (t.shares_with.empty()) {
      uint64_t members = 0;
      for (const auto& tt : r.tables)
        if (std::find(kept_apart.begin(), kept_apart.end(), tt.name) != kept_apart.end()) members += own_bytes(tt);
      ch.device_bytes = c.device_bytes - std::min(c.device_bytes, members);
      ch.host_bytes = c.host_bytes;
      auto b = baseline_of.find(owner);
      ch.why = why_of(r, it->second, b == baseline_of.end() ? nullptr : b->second, t, max_error);
    } else if (is_apart) {
      ch.shares_with.clear();
      ch.device_bytes = own_bytes(t);
      ch.why = "kept apart as recorded (its weights are the same as " + t.shares_with + "'s)";
    } else if (c.params_json.find("shared_by") != std::string::npos) {
      ch.why = "holds the same weights as " + t.shares_with + ": shares its copy (" + c.spec + ")";
    } else {
      ch.why = "tied to " + t.shares_with + ": shares its weights and their format (" + c.spec + ")";
    }
    r.choices.push_back(std::move(ch));
  }
}

}  // namespace edo::tuner
