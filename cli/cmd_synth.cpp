// `edo synth`: a synthetic Zipf workload streamed through the same statistics engine the
// tracer runs inside a job, written as an .edodb. The default workload of tests, demos and
// (later) the tuner and dashboard.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/dtype.h"
#include "edo/stats/iid_workload.h"
#include "edo/stats/table_stats.h"
#include "support/output_file.h"
#include "support/progress.h"
#include "version.h"

namespace edo::cli::synth_command {
namespace {

struct SynthOptions {
  std::string output;
  bool force = false;
  int tables = 4;
  uint64_t rows = 1'000'000;
  uint32_t dim = 64;
  std::string dtype = "fp32";
  double zipf = 1.05;
  uint64_t lookups = 4'000'000;
  uint64_t batch = 65'536;
  uint64_t seed = 42;
  uint64_t exact_rows = stats::StatsConfig{}.exact_rows_limit;
  uint64_t window_batches = 16;
  int threads = 0;  // 0: one per core
  bool stream = false;  // every table streamed, even where its statistics could be computed
  std::string gpu;  // "": a host job; else the tables live on this GPU (a GPU job's recording)
  // Varied tables (a recording of many tables of different sizes and skews): 0 / negative
  // means every table has --rows / --zipf.
  uint64_t min_rows = 0;
  double min_zipf = -1;
};

// Table t's rows and Zipf exponent: --rows and --zipf, or with --min-rows / --min-zipf drawn
// log-uniformly from [min-rows, rows] and uniformly from [min-zipf, zipf] by a hash of the
// seed and t (reproducible, and independent of how many tables there are).
struct TableShape {
  uint64_t rows;
  double zipf;
};
TableShape table_shape(const SynthOptions& o, int t) {
  auto unit = [&](uint64_t salt) {  // splitmix64 of (seed, t, salt) in [0, 1)
    uint64_t z = o.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(t) * 0xbf58476d1ce4e5b9ULL + salt;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) / 9007199254740992.0;
  };
  TableShape s{o.rows, o.zipf};
  if (o.min_rows > 0 && o.min_rows < o.rows) {
    const double lo = std::log(static_cast<double>(o.min_rows)), hi = std::log(static_cast<double>(o.rows));
    s.rows = std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(std::exp(lo + (hi - lo) * unit(1)))), o.min_rows, o.rows);
  }
  if (o.min_zipf >= 0 && o.min_zipf < o.zipf) s.zipf = o.min_zipf + (o.zipf - o.min_zipf) * unit(2);
  return s;
}

std::string command_line(const SynthOptions& o) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "edo synth --tables %d --rows %llu --dim %u --dtype %s --zipf %g --lookups %llu --batch %llu --seed %llu",
                o.tables, static_cast<unsigned long long>(o.rows), o.dim, o.dtype.c_str(), o.zipf,
                static_cast<unsigned long long>(o.lookups), static_cast<unsigned long long>(o.batch),
                static_cast<unsigned long long>(o.seed));
  std::string s = buf;
  if (o.min_rows > 0) s += " --min-rows " + std::to_string(o.min_rows);
  if (o.min_zipf >= 0) {
    std::snprintf(buf, sizeof buf, " --min-zipf %g", o.min_zipf);
    s += buf;
  }
  if (o.stream) s += " --stream";
  return s;
}

// Table t of the workload. A stream much longer than the table (and small enough for exact
// counts and stack distances) gets its statistics computed from drawn counts and a drawn
// sequence (stats::iid_aggregate); any other is drawn lookup by lookup and streamed through
// the same TableIngestor as a traced job's. `fast` says which.
model::Table make_table(const SynthOptions& o, const stats::StatsConfig& config, int t, std::atomic<uint64_t>& done,
                        bool& fast) {
  const TableShape shape = table_shape(o, t);
  // Each table gets its own seed so that hot rows differ between tables.
  const uint64_t seed = o.seed + 1000003ull * static_cast<uint64_t>(t);
  stats::ZipfGenerator gen(shape.rows, shape.zipf, seed);
  model::Table table;
  table.name = "synth.table_" + std::to_string(t);
  table.rows = shape.rows;
  table.dim = o.dim;
  table.dtype = o.dtype;
  table.device = o.gpu.empty() ? "host" : "cuda:0";
  table.base_address = 0;
  table.weight_bytes = shape.rows * o.dim * model::dtype_size(o.dtype);
  // When rows are first read, one segment per drift window (held-out validation).
  model::FirstSeenTracker first_seen;
  stats::IidStream stream;
  stream.lookups = o.lookups;
  stream.window_lookups = o.window_batches * o.batch;
  stream.drawn_lookups = stats::iid_drawn_lookups(shape.rows);
  fast = !o.stream && o.window_batches <= UINT64_MAX / o.batch && stats::iid_aggregate_applies(shape.rows, stream, config);
  if (fast) {
    // Row of rank k (1-based) has probability k^-A / sum_j j^-A, the likeliest first.
    std::vector<uint64_t> row_ids(shape.rows);
    std::vector<double> probs(shape.rows);
    double sum = 0;
    for (uint64_t k = shape.rows; k >= 1; --k) sum += std::pow(static_cast<double>(k), -shape.zipf);
    for (uint64_t k = 1; k <= shape.rows; ++k) {
      row_ids[k - 1] = gen.row_of_rank(k);
      probs[k - 1] = std::pow(static_cast<double>(k), -shape.zipf) / sum;
    }
    table.aggregate = stats::iid_aggregate(shape.rows, config, row_ids, probs, stream, seed,
                                           [&](const stats::TableAggregate& before, const stats::TableAggregate& window) {
                                             first_seen.add(before, window);
                                           });
    done += o.lookups;
  } else {
    std::vector<int64_t> batch(o.batch);
    stats::TableIngestor ingestor(shape.rows, config);
    first_seen.begin_segment();
    uint64_t made = 0;
    uint64_t batches = 0;
    while (made < o.lookups) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(o.batch, o.lookups - made));
      gen.fill(batch.data(), n);
      ingestor.add(batch.data(), n);
      first_seen.add_indices(batch.data(), n, shape.rows);
      made += n;
      done += n;
      if (++batches % o.window_batches == 0) {
        ingestor.close_window();
        if (made < o.lookups) first_seen.begin_segment();
      }
    }
    if (batches % o.window_batches != 0) ingestor.close_window();
    table.aggregate = ingestor.take_delta();
  }
  table.first_seen = first_seen.finish(table.aggregate);
  return table;
}

// The one session of a synthetic recording: this command, this host and process, and as many
// steps as the lookups make batches.
model::Session synth_session(const SynthOptions& o, std::chrono::system_clock::time_point start) {
  model::Session session;
  session.id = 1;
  session.command = command_line(o);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  session.host = host;
  session.pid = getpid();
  session.parent_pid = getppid();
  session.start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  session.source = "synth";
  session.gpus = o.gpu;
  session.steps = (o.lookups + o.batch - 1) / o.batch;
  return session;
}

// Every table, made by `threads` workers that take them in turn (each table depends only on
// (options, t): the output is the same whatever their number), with a progress line; `computed`
// counts the tables whose statistics were computed from drawn counts (iid_workload.h).
std::vector<model::Table> make_tables(const SynthOptions& o, int& computed_tables) {
  stats::StatsConfig config;
  config.exact_rows_limit = o.exact_rows;
  const int threads = std::clamp(o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency()), 1, o.tables);
  std::vector<model::Table> tables(static_cast<size_t>(o.tables));
  std::vector<char> computed(static_cast<size_t>(o.tables), 0);
  std::atomic<uint64_t> done{0};  // lookups made, over all tables (the progress line)
  std::atomic<int> next{0}, finished{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  std::condition_variable cv;
  auto worker = [&] {
    for (int t; !failed && (t = next++) < o.tables;) {
      try {
        bool fast = false;
        tables[static_cast<size_t>(t)] = make_table(o, config, t, done, fast);
        computed[static_cast<size_t>(t)] = fast;
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
      {
        std::lock_guard lock(mu);
        ++finished;
      }
      cv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  Progress progress("edo synth");
  const double total_work = static_cast<double>(o.lookups) * o.tables;
  {
    std::unique_lock lock(mu);
    while (finished < o.tables && !failed) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      progress.update(static_cast<double>(done.load()), total_work,
                      std::to_string(finished.load()) + "/" + std::to_string(o.tables) + " tables");
    }
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  computed_tables = 0;
  for (char c : computed) computed_tables += c;
  progress.finish();
  return tables;
}

int run_synth(const SynthOptions& o) {
  if (o.min_rows > o.rows)
    throw UsageError("--min-rows " + std::to_string(o.min_rows) + " is more than --rows " + std::to_string(o.rows) +
                     " (the largest table); give --rows at least --min-rows");
  if (o.min_zipf > o.zipf)
    throw UsageError("--min-zipf is more than --zipf (the most skewed table); give --zipf at least --min-zipf");
  check_output_path(o.output, o.force);
  // Created before the work, so that an unwritable path is said at once, not after minutes;
  // written beside the output and renamed over it once whole (issue 30 §4).
  db::ProfileStore store = db::ProfileStore::create_beside(o.output);
  const auto start = std::chrono::system_clock::now();
  const auto t0 = std::chrono::steady_clock::now();
  model::Profile profile;
  model::Session session = synth_session(o, start);
  profile.metadata["edo_version"] = EDO_VERSION;
  profile.metadata["synth.zipf_alpha"] = std::to_string(o.zipf);
  profile.metadata["synth.seed"] = std::to_string(o.seed);

  int computed_tables = 0;
  std::vector<model::Table> tables = make_tables(o, computed_tables);
  uint64_t total_rows = 0;
  for (auto& t : tables) {
    t.session_id = session.id;
    total_rows += t.rows;
  }
  profile.tables = std::move(tables);
  // How many tables had their statistics computed from drawn counts (iid_workload.h), not streamed.
  if (computed_tables > 0) profile.metadata["synth.computed_tables"] = std::to_string(computed_tables);
  session.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  session.exit_code = 0;
  profile.sessions.push_back(session);

  store.save(profile);
  store.publish();
  if (o.min_rows > 0 || o.min_zipf >= 0)
    std::fprintf(stderr, "edo synth: wrote %s (%d tables, %llu rows in all, %llu to %llu rows each, %llu lookups each, Zipf %g to %g)\n",
                 o.output.c_str(), o.tables, static_cast<unsigned long long>(total_rows),
                 static_cast<unsigned long long>(o.min_rows > 0 ? std::min(o.min_rows, o.rows) : o.rows),
                 static_cast<unsigned long long>(o.rows), static_cast<unsigned long long>(o.lookups),
                 o.min_zipf >= 0 ? std::min(o.min_zipf, o.zipf) : o.zipf, o.zipf);
  else
    std::fprintf(stderr, "edo synth: wrote %s (%d tables x %llu rows, %llu lookups each, Zipf %g)\n", o.output.c_str(),
                 o.tables, static_cast<unsigned long long>(o.rows), static_cast<unsigned long long>(o.lookups), o.zipf);
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<SynthOptions>();
  sub.footer(
      "Rows are drawn from a bounded Zipf(A) over ranks 1..R (P(rank k) ~ k^-A, A = 0 is uniform), independently\n"
      "for each lookup, mapped to row ids by a seeded random permutation, so hot rows are spread over the table.\n"
      "Table t (0-based) is named synth.table_<t> and draws from seed S + 1000003*t, so runs are reproducible and\n"
      "tables differ. Tables are made in parallel (--threads); the output does not depend on how many.\n\n"
      "What is drawn and what is computed:\n"
      "  * Streamed (most workloads): every lookup is drawn and goes through the same statistics engine that\n"
      "    'edo record' runs inside a job, in batches of --batch.\n"
      "  * Computed (unless --stream; a table of at most 65,536 rows and --exact-rows, with at least 64 lookups\n"
      "    a row, 4x the drawn sequence below, and drift windows x rows at most lookups / 16): the statistics\n"
      "    of the same stream, in distribution, without drawing each lookup. Per-row\n"
      "    counts: one multinomial draw per drift window (exact totals). Drift hot sets and first-seen curve:\n"
      "    from those window counts. Ordered sample (held-out replay): the sampled rows' references at random\n"
      "    positions of their window. LRU curve: first reads are the rows read; the other lookups' stack\n"
      "    distances follow those of a drawn sequence of 32 lookups a row (2^16..2^20) through an exact stack.\n"
      "    The database's metadata synth.computed_tables says how many tables were computed.\n\n"
      "With --min-rows and --min-zipf, tables differ in size and skew (a recording of many tables for the tuner).\n\n"
      "Example:\n  edo synth -o demo.edodb --tables 8 --rows 10000000 --zipf 1.15 --lookups 20000000\n  edo report demo.edodb\n"
      "  edo synth -o many.edodb --tables 1000 --min-rows 1000 --rows 1000000 --min-zipf 0.6 --zipf 1.2 --lookups 65536");
  sub.add_option("-o,--output", o->output, "database file to write")->required();
  sub.add_flag("--force", o->force, "replace the output if it is an edo database (other files are never replaced)");
  sub.add_option("--tables", o->tables, "number of tables")->capture_default_str()->check(CLI::Range(1, 1000000));
  sub.add_option("--rows", o->rows, "rows per table")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub.add_option("--dim", o->dim, "embedding dimension")->capture_default_str()->check(CLI::Range(1u, 65536u));
  sub.add_option("--dtype", o->dtype, "element type of the table")
      ->capture_default_str()
      ->transform(CLI::Validator(
          [](std::string& s) -> std::string {  // any spelling of edo/dtype.h, stored by its name
            const auto t = parse_dtype(s);
            if (!t || (*t != DType::Fp32 && *t != DType::Fp16 && *t != DType::Bf16)) return "'" + s + "' is not fp32, fp16 or bf16";
            s = std::string(dtype_name(*t));
            return {};
          },
          "fp32|fp16|bf16"));
  sub.add_option("--zipf", o->zipf, "Zipf exponent A (0 = uniform)")->capture_default_str()->check(CLI::Range(0.0, 10.0));
  sub.add_option("--min-rows", o->min_rows,
                 "varied sizes: each table's rows drawn log-uniformly from [MIN, --rows] (reproducible from --seed)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub.add_option("--min-zipf", o->min_zipf, "varied skew: each table's Zipf exponent drawn uniformly from [MIN, --zipf]")
      ->check(CLI::Range(0.0, 10.0));
  sub.add_option("--lookups", o->lookups, "lookups (row reads) per table")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub.add_option("--batch", o->batch, "lookups per batch")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 26));
  sub.add_option("--seed", o->seed, "random seed")->capture_default_str();
  sub.add_option("--gpu", o->gpu,
                 "make it a GPU job's recording: the tables live on this GPU (e.g. \"NVIDIA H200\"; edo tune models it "
                 "when edo has its profile)")
      ->type_name("NAME");
  sub.add_option("--exact-rows", o->exact_rows, "tables with more rows use sketches instead of exact counts")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub.add_flag("--stream", o->stream, "draw and stream every lookup, also where the statistics could be computed (slow)");
  sub.add_option("--threads", o->threads, "tables made at once (the output is the same for any number); 0: one per core")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  sub.add_option("--window-batches", o->window_batches, "batches per drift window (hot-set overlap)")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  return [o] { return run_synth(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("synth", "write a synthetic Zipf workload's profile (tests, demos, trying the tools)", 40, setup);

}  // namespace edo::cli::synth_command
