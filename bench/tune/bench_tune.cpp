// `edo tune` on a Criteo-like recording: 26 tables with the Criteo-1TB DLRM row counts (six
// of 10M+ rows), 128 columns, Zipf-skewed lookups, tuned with a time limit. Prints edo's wall
// time beside its anchor, the limit it was given, as a ratio (target: <= 1), and how many
// candidates it measured.
//
//   bench_tune [--backend cpu|cuda] [--time-limit S] [--budget SIZE] [--lookups N] [--out DIR] [--smoke]
//   bench_tune --stability [--repeat N] [--backend cpu|cuda] [--out DIR]
//   bench_tune --scale [--counts 26,1000] [--time-limit S] [--backend cpu|cuda] [--out DIR]
//
// --smoke: 3 small tables and a 5 s limit (the test suite's check that the bench runs).
// --stability (issue 19 point 3): four identical tables (200000 x 64, one Zipf stream), tuned
// N times (default 5) with --objective speed, fp16/bf16/int8 and no error limit, on the real
// backend: prints how many runs gave the most common plan (anchor: all N) and in how many runs
// the four tables got one choice (anchor: all N).
// --scale (issue 19 point 8): `edo synth` recordings of 26 and 1000 tables of varied sizes (1000 to
// 1M rows, 64 columns, Zipf 0.6-1.2, one step of 65536 lookups each), each tuned by `edo tune` with
// its default time limit and a budget of 60 % of the recorded bytes: prints the wall time beside
// the limit as a ratio (target <= 1) and how many tables were measured or predicted. Then the
// prediction error: the tables of the largest recording whose names end in 27 or 77 (a sample
// fixed in advance) that were predicted, with their representatives, tuned again in one run with
// --measure-every-table (fp16, bf16, int8, offload); each member's time predicted from its
// representative's in that run against its own: the median of |predicted - measured| / measured;
// beside it the same sample measured again at once (the noise floor).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/text/glob.h"
#include "edo/tuner/tuner.h"
#include "representatives.h"
#include "workload.h"
#include "edo/stats/table_stats.h"

namespace fs = std::filesystem;

namespace {

// Criteo-1TB's 26 categorical features as TorchRec's DLRM example sizes them.
const std::vector<uint64_t> kCriteoRows = {45833188, 36746, 17245, 7413, 20243, 3,     7114,     1441,     62,
                                           29275261, 1572176, 345138, 10,   2209,  11267, 128,     4,        974,
                                           14,       48937457, 11316796, 40094537, 452104, 12606, 104, 35};

std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

void build_recording(const std::string& path, const std::vector<uint64_t>& rows, uint32_t dim, uint64_t lookups,
                     bool identical = false) {
  edo::model::Profile p;
  edo::model::Session s;
  s.id = 1;
  s.command = "bench_tune: Criteo-like synthetic recording";
  s.source = "synth";
  s.steps = (lookups + 65535) / 65536;  // one id per feature per sample, 65536 samples per step
  p.sessions.push_back(s);
  std::vector<int64_t> batch(65536);
  for (size_t t = 0; t < rows.size(); ++t) {
    // Skew differs by feature: most Zipf 1.05-1.2, every fifth close to uniform.
    const double alpha = identical ? 1.1 : t % 5 == 4 ? 0.3 : 1.05 + 0.05 * static_cast<double>(t % 4);
    edo::stats::ZipfGenerator gen(rows[t], alpha, identical ? 1000 : 1000 + t);
    edo::stats::TableIngestor ing(rows[t], edo::stats::StatsConfig{});
    for (uint64_t done = 0; done < lookups;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(batch.size(), lookups - done));
      gen.fill(batch.data(), n);
      ing.add(batch.data(), n);
      done += n;
    }
    edo::model::Table tab;
    tab.session_id = 1;
    tab.name = "criteo.cat_" + std::to_string(t);
    tab.rows = rows[t];
    tab.dim = dim;
    tab.dtype = "fp32";
    tab.device = "cuda";
    tab.weight_bytes = rows[t] * dim * 4;
    tab.aggregate = ing.take_delta();
    p.tables.push_back(std::move(tab));
  }
  edo::db::ProfileStore store(path, edo::db::ProfileStore::Mode::kCreate);
  store.save(p);
}

int run(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The same recording tuned `repeat` times: how often the plan (table -> spec) is the first's.
int stability(const std::string& backend, const std::string& out, int repeat) {
  const std::string db = out + "/identical.edodb";
  build_recording(db, {200000, 200000, 200000, 200000}, 64, 1'000'000, true);
  const std::string edo = self_dir() + "/edo";
  std::vector<std::string> plans;
  int uniform = 0;
  for (int k = 0; k < repeat; ++k) {
    const int rc = run({edo, "tune", db, "--budget", "1GiB", "--objective", "speed", "--max-error", "inf", "--strategies",
                        "fp16,bf16,int8", "--backend", backend, "--json"},
                       out + "/stable.json", out + "/stable.err");
    const auto j = nlohmann::json::parse(slurp(out + "/stable.json"), nullptr, false);
    if (rc != 0 || j.is_discarded() || !j.contains("tables")) {
      std::fprintf(stderr, "bench_tune: run %d: edo tune exited %d: %s\n", k + 1, rc, slurp(out + "/stable.err").c_str());
      return 1;
    }
    std::string plan, first_spec;
    bool same = true;
    for (const auto& t : j["tables"]) {
      const std::string spec = t["spec"].get<std::string>();
      plan += t["name"].get<std::string>() + "=" + spec + " ";
      if (first_spec.empty()) first_spec = spec;
      same = same && spec == first_spec;
    }
    uniform += same;
    plans.push_back(plan);
    std::fprintf(stderr, "bench_tune: run %d: %s\n", k + 1, plan.c_str());
  }
  // How many runs gave the most common plan.
  int agree = 0;
  for (const auto& p : plans) agree = std::max(agree, static_cast<int>(std::count(plans.begin(), plans.end(), p)));
  std::printf("same_plan %d of %d (anchor %d, ratio %.2f)  runs_with_one_choice_for_the_four_identical_tables %d of %d  backend %s\n",
              agree, repeat, repeat, static_cast<double>(agree) / repeat, uniform, repeat, backend.c_str());
  return agree == repeat ? 0 : 1;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The default --time-limit of `edo tune`, read from its --help (the bench measures against
// what a user gets without the flag).
double default_time_limit(const std::string& edo, const std::string& out) {
  run({edo, "tune", "--help"}, out + "/help.txt", out + "/help.err");
  const std::string help = slurp(out + "/help.txt");
  const auto at = help.find("--time-limit");
  const auto open = at == std::string::npos ? at : help.find("=", at);  // "--time-limit X=300 [0..1e+07]"
  return open == std::string::npos ? 300.0 : std::atof(help.c_str() + open + 1);
}

// `given_limit` > 0: edo tune runs with that --time-limit instead of its default (a quick look).
int scale(const std::string& backend, const std::string& out, const std::vector<int>& counts, double given_limit) {
  const std::string edo = self_dir() + "/edo";
  const double limit = given_limit > 0 ? given_limit : default_time_limit(edo, out);
  int status = 0;
  std::string largest;
  for (int n : counts) {
    const std::string db = out + "/synth-" + std::to_string(n) + ".edodb";
    fs::remove(db);
    auto t0 = std::chrono::steady_clock::now();
    int rc = run({edo, "synth", "-o", db, "--tables", std::to_string(n), "--min-rows", "1000", "--rows", "1000000", "--min-zipf",
                  "0.6", "--zipf", "1.2", "--lookups", "65536", "--dim", "64", "--seed", "5"},
                 out + "/synth.out", out + "/synth.err");
    const double synth_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::fprintf(stderr, "bench_tune: edo synth exited %d: %s\n", rc, slurp(out + "/synth.err").c_str());
      return 1;
    }
    uint64_t bytes = 0;
    {
      edo::db::ProfileStore store(db, edo::db::ProfileStore::Mode::kReadOnly);
      for (const auto& t : store.load().tables) bytes += t.weight_bytes;
    }
    const uint64_t budget = bytes / 10 * 6;
    t0 = std::chrono::steady_clock::now();
    std::vector<std::string> args{edo, "tune", db, "--budget", std::to_string(budget), "--backend", backend, "--json"};
    if (given_limit > 0) {
      args.push_back("--time-limit");
      args.push_back(std::to_string(given_limit));
    }
    rc = run(args, out + "/plan-" + std::to_string(n) + ".json", out + "/tune-" + std::to_string(n) + ".err");
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto j = nlohmann::json::parse(slurp(out + "/plan-" + std::to_string(n) + ".json"), nullptr, false);
    if (j.is_discarded() || !j.contains("tables")) {
      std::fprintf(stderr, "bench_tune: edo tune exited %d without a plan: %s\n", rc, slurp(out + "/tune-" + std::to_string(n) + ".err").c_str());
      return 1;
    }
    std::map<std::string, int> kinds;
    for (const auto& t : j["tables"]) kinds[t["timing_source"].is_object() ? t["timing_source"]["kind"].get<std::string>() : "none"]++;
    std::printf("tables %d  tune_wall_s %.1f  %s_time_limit_s %.0f  ratio %.3f (target <= 1)  synth_s %.1f  stop %s  "
                "tables_measured %d  predicted %d  twin %d  candidates_measured %d of %d  plan %s  exit %d\n",
                n, wall, given_limit > 0 ? "given" : "default", limit, wall / limit, synth_s, j["stop_reason"].is_string() ? j["stop_reason"].get<std::string>().c_str() : "none",
                kinds["measured"], kinds["predicted"], kinds["twin"], j["candidates_measured"].get<int>(), j.value("candidates_total", 0),
                j["feasible"].get<bool>() ? "found" : "none", rc);
    std::fflush(stdout);
    status |= wall <= limit ? 0 : 1;
    largest = db;
  }
  // The prediction error on a sample of the largest recording's tables (names ending in 27 or
  // 77, fixed in advance), each predicted in the run above, with the representatives they were
  // predicted from: a recording of just those, every table measured in one run, and each
  // member's time predicted from its class's representative in that same run
  // (representatives.h, as edo tune does) against its own measurement. Both sides are measured
  // minutes apart at most, so the figure is the prediction's error, not the machine's drift
  // between runs (printed beside it: the run above against this one, for the representatives,
  // measured both times).
  const std::string glob = "synth.table_*[27]7";
  edo::model::Profile whole;
  edo::model::TuneResult first;
  {
    edo::db::ProfileStore store(largest, edo::db::ProfileStore::Mode::kReadOnly);
    whole = store.load();
    first = edo::db::load_tune_result(store, edo::db::tune_run_ids(store).back());
  }
  std::set<std::string> keep, reps;
  for (const auto& c : first.candidates)
    if (c.timing_kind == edo::model::TimingKind::kPredicted && edo::glob_match(glob, c.table)) {
      keep.insert(c.table);
      reps.insert(c.timing_from);
    }
  keep.insert(reps.begin(), reps.end());
  edo::model::Profile part;
  part.sessions = whole.sessions;
  part.metadata = whole.metadata;
  for (const auto& t : whole.tables)
    if (keep.count(t.name)) part.tables.push_back(t);
  const std::string sample_db = out + "/sample.edodb";
  fs::remove(sample_db);
  { edo::db::ProfileStore(sample_db, edo::db::ProfileStore::Mode::kCreate).save(part); }
  auto t0 = std::chrono::steady_clock::now();
  const int rc = run({edo, "tune", sample_db, "--budget", "1TiB", "--backend", backend, "--measure-every-table", "--strategies",
                      "fp16,bf16,int8,offload", "--time-limit", "0", "--json"},
                     out + "/sample.json", out + "/sample.err");
  const double sample_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::fprintf(stderr, "bench_tune: the sample's edo tune exited %d: %s\n", rc, slurp(out + "/sample.err").c_str());
    return 1;
  }
  // The same, measured again at once: how far two measurements of one table apart (the noise
  // floor any prediction on this machine is judged against).
  const int rc2 = run({edo, "tune", sample_db, "--budget", "1TiB", "--backend", backend, "--measure-every-table", "--strategies",
                       "fp16,bf16,int8,offload", "--time-limit", "0", "--json"},
                      out + "/sample-again.json", out + "/sample-again.err");
  if (rc2 != 0) {
    std::fprintf(stderr, "bench_tune: the sample's second edo tune exited %d: %s\n", rc2, slurp(out + "/sample-again.err").c_str());
    return 1;
  }
  edo::model::TuneResult real, again;
  {
    edo::db::ProfileStore store(sample_db, edo::db::ProfileStore::Mode::kReadOnly);
    const auto ids = edo::db::tune_run_ids(store);
    real = edo::db::load_tune_result(store, ids[ids.size() - 2]);
    again = edo::db::load_tune_result(store, ids.back());
  }
  // The classes of the sample recording, as edo tune makes them.
  const edo::tuner::Workload w = edo::tuner::build_workload(part, {}, "*");
  const edo::tuner::TimingClasses classes = edo::tuner::timing_classes(w, true);
  std::map<std::string, std::vector<size_t>> of_table;  // table -> its candidates in `real`
  std::map<std::string, double> lookups;
  for (size_t i = 0; i < real.candidates.size(); ++i) of_table[real.candidates[i].table].push_back(i);
  for (const auto& t : real.tables) lookups[t.name] = t.lookups_per_step;
  auto as_candidates = [&](const std::string& table) {  // what matching_candidate() reads
    std::vector<edo::tuner::Candidate> v;
    for (size_t i : of_table[table]) {
      const auto& c = real.candidates[i];
      edo::tuner::Candidate x;
      x.strategy = c.strategy;
      x.spec = c.spec;
      x.optimizer = c.optimizer;
      x.baseline = v.empty();
      x.recorded_hit_rate = c.recorded_hit_rate;
      v.push_back(x);
    }
    return v;
  };
  std::map<std::string, std::vector<double>> by_strategy;
  std::vector<double> all;
  std::set<std::string> members;
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    if (classes.source[gi] < 0) continue;
    const std::string& name = w.groups[gi].name;
    const std::string& rep = w.groups[static_cast<size_t>(classes.source[gi])].name;
    const auto own = as_candidates(name), theirs = as_candidates(rep);
    for (size_t ci = 0; ci < own.size(); ++ci) {
      const int k = edo::tuner::matching_candidate(theirs, own, ci);
      const auto& measured = real.candidates[of_table[name][ci]];
      if (k < 0 || !measured.usable()) continue;
      const auto& src = real.candidates[of_table[rep][static_cast<size_t>(k)]];
      const auto& base = real.candidates[of_table[rep][0]];
      if (!src.usable()) continue;
      edo::model::TuneCandidate predicted = measured;
      edo::tuner::borrow_timing(predicted, src, base, lookups[name], lookups[rep], rep, classes.twin[gi]);
      const double e = std::fabs(predicted.step_us - measured.step_us) / measured.step_us;
      all.push_back(e);
      by_strategy[measured.strategy].push_back(e);
      members.insert(name);
    }
  }
  auto p90 = [](std::vector<double> v) -> double {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    return v[v.size() * 9 / 10];
  };
  std::printf("prediction_error median %.3f  p90 %.3f  candidates %zu  tables %zu predicted from %zu classes' representatives "
              "(sample %s of the %s-table run and their representatives, all measured in one run of %.1f s)\n",
              median(all), p90(all), all.size(), members.size(), classes.classes, glob.c_str(),
              std::to_string(counts.back()).c_str(), sample_s);
  for (const auto& [st, v] : by_strategy) std::printf("  %-8s median %.3f  p90 %.3f  n %zu\n", st.c_str(), median(v), p90(v), v.size());
  std::vector<double> repeat;
  for (size_t i = 0; i < real.candidates.size() && i < again.candidates.size(); ++i) {
    const auto &a = real.candidates[i], &b = again.candidates[i];
    if (a.usable() && b.usable() && a.table == b.table && a.spec == b.spec) repeat.push_back(std::fabs(a.step_us - b.step_us) / b.step_us);
  }
  std::printf("repeat_noise median %.3f  p90 %.3f  n %zu (every sample candidate measured again at once: |first - second| / second, "
              "the floor of any figure above on this machine)\n",
              median(repeat), p90(repeat), repeat.size());
  // The machine's drift between the big run and this one: the same tables measured in both.
  std::vector<double> drift;
  std::map<std::string, const edo::model::TuneCandidate*> then;
  for (const auto& c : first.candidates)
    if (c.usable() && c.timing_kind == edo::model::TimingKind::kMeasured) then[c.table + " " + c.spec] = &c;
  for (const auto& c : real.candidates) {
    auto it = then.find(c.table + " " + c.spec);
    if (c.usable() && it != then.end()) drift.push_back(std::fabs(it->second->step_us - c.step_us) / c.step_us);
  }
  std::printf("run_to_run_drift median %.3f  p90 %.3f  n %zu (the representatives' times in the %d-table run against this run: "
              "the noise of a loaded machine, not of the prediction)\n",
              median(drift), p90(drift), drift.size(), counts.back());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cpu", budget = "24GiB", out = fs::temp_directory_path() / ("edo-bench-tune-" + std::to_string(getpid()));
  double limit = 120;
  uint64_t lookups = 1'000'000;
  bool smoke = false, stable = false, scaled = false, limit_given = false;
  std::vector<int> counts = {26, 1000};
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_tune: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") backend = next();
    else if (a == "--time-limit") {
      limit = std::atof(next().c_str());
      limit_given = true;
    }
    else if (a == "--budget") budget = next();
    else if (a == "--lookups") lookups = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--out") out = next();
    else if (a == "--smoke") smoke = true;
    else if (a == "--stability") stable = true;
    else if (a == "--scale") scaled = true;
    else if (a == "--counts") {
      counts.clear();
      std::stringstream list(next());
      for (std::string x; std::getline(list, x, ',');) counts.push_back(std::max(1, std::atoi(x.c_str())));
    }
    else if (a == "--repeat") repeat = std::max(1, std::atoi(next().c_str()));
    else {
      std::fprintf(stderr, "bench_tune: unknown argument %s (see the comment at the top of bench_tune.cpp)\n", a.c_str());
      return 2;
    }
  }
  if (stable) {
    fs::create_directories(out);
    return stability(backend, out, repeat);
  }
  if (scaled) {
    fs::create_directories(out);
    return scale(backend, out, counts, limit_given ? limit : 0.0);
  }
  std::vector<uint64_t> rows = kCriteoRows;
  uint32_t dim = 128;
  if (smoke) {
    rows = {200000, 30000, 500};
    dim = 16;
    lookups = 100000;
    limit = 5;
    budget = "8MiB";
  }
  fs::create_directories(out);
  const std::string db = out + "/criteo-like.edodb";
  auto t0 = std::chrono::steady_clock::now();
  build_recording(db, rows, dim, lookups);
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t big = 0, baseline = 0;
  for (uint64_t r : rows) {
    big += r >= 10'000'000;
    baseline += r * dim * 4;
  }
  std::fprintf(stderr, "bench_tune: recording of %zu tables (%llu of 10M+ rows, %.1f GB of fp32 weights) built in %.1f s\n",
               rows.size(), static_cast<unsigned long long>(big), static_cast<double>(baseline) / 1e9, build_s);

  const std::string edo = self_dir() + "/edo";
  char lim[32];
  std::snprintf(lim, sizeof lim, "%g", limit);
  t0 = std::chrono::steady_clock::now();
  const int rc = run({edo, "tune", db, "--budget", budget, "--time-limit", lim, "--backend", backend, "--json"},
                     out + "/plan.json", out + "/tune.err");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(out + "/plan.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.contains("candidates_measured")) {
    std::ifstream e(out + "/tune.err");
    std::stringstream es;
    es << e.rdbuf();
    std::fprintf(stderr, "bench_tune: edo tune exited %d without a plan: %s\n", rc, es.str().c_str());
    return 1;
  }
  const double plan_gb = j["plan"].is_object() ? j["plan"]["device_bytes"].get<double>() / 1e9 : 0.0;
  std::printf("tune_wall_s %.1f  time_limit_s %.0f  ratio %.3f (target <= 1)  backend %s  device \"%s\"\n", wall, limit,
              wall / limit, j["backend"].get<std::string>().c_str(), j["device"].get<std::string>().c_str());
  std::printf("candidates_measured %d of %d  tables %zu (%llu of 10M+ rows)  baseline %.2f GB  plan %.2f GB  budget %s  exit %d\n",
              j["candidates_measured"].get<int>(), j.value("candidates_total", 0), rows.size(),
              static_cast<unsigned long long>(big), static_cast<double>(baseline) / 1e9, plan_gb, budget.c_str(), rc);
  return wall <= limit ? 0 : 1;
}
