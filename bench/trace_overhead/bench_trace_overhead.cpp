// Tracer overhead on a CPU embedding-bag training-like loop.
//
// Per step: forward bag-sum over a rows x 64 fp32 table (64K indices, bags of 32), backward
// scatter-add of the bag gradients into the rows read + SGD. The loop runs in child
// processes (this binary re-execs itself): "baseline" without the tracer (no edo calls),
// "traced" with EDO_OUTPUT set (edo_table_lookup per step, exact counting), alternating,
// median of the repetitions. The traced run's output is decoded afterwards to check that
// every lookup was counted (no drops).
//
// Anchor: heaptrack costs 4.25x on malloc-heavy code on this machine (research notes).
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "edo/collector/collector.h"
#include "edo/edo.h"
#include "edo/stats/table_stats.h"

namespace {

struct Opts {
  uint64_t rows = 1'000'000;
  uint32_t dim = 64;
  uint64_t batch = 65'536;
  uint32_t bag = 32;
  int steps = 40;
  int reps = 3;
  std::string extra_env;  // for the traced child, e.g. EDO_ASYNC=0
};

double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}
double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Timing {
  double wall_ms = 0, thread_cpu_ms = 0, process_cpu_ms = 0;
};

Timing run_loop(const Opts& o, bool traced) {
  std::vector<float> w(o.rows * o.dim);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 97) * 0.01f;
  const uint64_t bags = o.batch / o.bag;
  std::vector<float> out(bags * o.dim), grad(bags * o.dim);
  edo::stats::ZipfGenerator gen(o.rows, 1.05, 42);
  const int kSets = 8;
  std::vector<std::vector<int64_t>> idx(kSets, std::vector<int64_t>(o.batch));
  for (auto& v : idx) gen.fill(v.data(), v.size());
  int64_t h = -1;
  if (traced) {
    h = edo_table_register("bench.emb", w.data(), o.rows, o.dim, EDO_F32, EDO_HOST);
    if (h < 0) {
      std::fprintf(stderr, "register failed: %s\n", edo_strerror(int(h)));
      std::exit(3);
    }
  }
  const float lr = 0.01f;
  auto step = [&](int s) {
    const int64_t* ix = idx[size_t(s) % kSets].data();
    if (traced) edo_table_lookup(h, ix, o.batch, EDO_I64, EDO_HOST, nullptr);
    // forward: bag sum
    for (uint64_t b = 0; b < bags; ++b) {
      float* dst = &out[b * o.dim];
      std::memset(dst, 0, sizeof(float) * o.dim);
      for (uint32_t k = 0; k < o.bag; ++k) {
        const float* row = &w[size_t(ix[b * o.bag + k]) * o.dim];
        for (uint32_t d = 0; d < o.dim; ++d) dst[d] += row[d];
      }
    }
    // loss gradient (toy): d(0.5*|out|^2)/d out = out, scaled
    for (size_t i = 0; i < out.size(); ++i) grad[i] = out[i] * 1e-3f;
    // backward scatter-add + SGD
    for (uint64_t b = 0; b < bags; ++b) {
      const float* g = &grad[b * o.dim];
      for (uint32_t k = 0; k < o.bag; ++k) {
        float* row = &w[size_t(ix[b * o.bag + k]) * o.dim];
        for (uint32_t d = 0; d < o.dim; ++d) row[d] -= lr * g[d];
      }
    }
    if (traced) edo_step();
  };
  for (int s = 0; s < 3; ++s) step(s);  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_ms(), p0 = process_cpu_ms();
  for (int s = 0; s < o.steps; ++s) step(s);
  Timing t;
  t.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.thread_cpu_ms = thread_cpu_ms() - c0;
  t.process_cpu_ms = process_cpu_ms() - p0;
  volatile float sink = out[0];
  (void)sink;
  return t;
}

Timing child(const char* self, const Opts& o, bool traced, const std::string& trace, const std::string& extra_env) {
  int pipefd[2];
  if (pipe(pipefd) != 0) std::exit(2);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    dup2(pipefd[1], 1);
    unsetenv("EDO_CHANNEL");
    unsetenv("EDO_OUTPUT_OWNER");
    unsetenv("EDO_ROOT_PID");
    if (traced) setenv("EDO_OUTPUT", trace.c_str(), 1);
    else unsetenv("EDO_OUTPUT");
    if (!extra_env.empty()) putenv(const_cast<char*>(extra_env.c_str()));
    const std::string rows = std::to_string(o.rows), steps = std::to_string(o.steps);
    execl(self, self, "--child", traced ? "traced" : "baseline", "--rows", rows.c_str(), "--steps", steps.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(pipefd[1]);
  std::string s;
  char buf[256];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  close(pipefd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "bench child failed (status %d)\n", st);
    std::exit(1);
  }
  Timing t;
  if (std::sscanf(s.c_str(), "%lf %lf %lf", &t.wall_ms, &t.thread_cpu_ms, &t.process_cpu_ms) != 3) std::exit(1);
  return t;
}

uint64_t recorded_lookups(const std::string& trace, uint64_t* dropped) {
  edo::collector::ProfileBuilder b("bench");
  std::ifstream in(trace, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const int s = b.open_stream(trace);
  b.feed(s, bytes.data(), bytes.size());
  b.close_stream(s);
  uint64_t n = 0;
  for (auto& t : b.profile().tables) n += t.aggregate.lookups();
  *dropped = b.profile().dropped_events();
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  std::string child_mode;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--child") child_mode = next();
    else if (a == "--rows") o.rows = std::strtoull(next(), nullptr, 10);
    else if (a == "--steps") o.steps = std::atoi(next());
    else if (a == "--reps") o.reps = std::atoi(next());
    else {
      std::fprintf(stderr, "usage: bench_trace_overhead [--rows N] [--steps N] [--reps N]\n");
      return 2;
    }
  }
  if (!child_mode.empty()) {
    const Timing t = run_loop(o, child_mode == "traced");
    std::printf("%.3f %.3f %.3f\n", t.wall_ms, t.thread_cpu_ms, t.process_cpu_ms);
    return 0;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';
  const std::string trace = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/edo_bench_trace." + std::to_string(getpid());
  std::printf("trace_overhead: %llu x %u fp32 table, %llu indices per step (bags of %u), %d steps, %d reps, Zipf 1.05\n",
              static_cast<unsigned long long>(o.rows), o.dim, static_cast<unsigned long long>(o.batch), o.bag, o.steps, o.reps);
  std::printf("anchor: heaptrack costs 4.25x on malloc-heavy code on this machine\n");
  const uint64_t expected = uint64_t(o.steps + 3) * o.batch;
  int rc = 0;
  for (const char* mode : {"async", "sync"}) {
    const std::string env = std::string("EDO_ASYNC=") + (std::strcmp(mode, "async") == 0 ? "1" : "0");
    std::vector<double> base, traced, base_cpu, traced_cpu, traced_proc;
    uint64_t got = 0, dropped = 0;
    for (int r = 0; r < o.reps; ++r) {
      const Timing b = child(self, o, false, trace, "");
      const Timing t = child(self, o, true, trace, env);
      base.push_back(b.wall_ms);
      traced.push_back(t.wall_ms);
      base_cpu.push_back(b.thread_cpu_ms);
      traced_cpu.push_back(t.thread_cpu_ms);
      traced_proc.push_back(t.process_cpu_ms);
      got = recorded_lookups(trace, &dropped);
      std::remove(trace.c_str());
    }
    const double b = median(base), t = median(traced);
    const double step_ms = b / o.steps;
    const double bc = median(base_cpu), tc = median(traced_cpu), tp = median(traced_proc);
    if (std::strcmp(mode, "async") == 0) {
      std::printf("baseline_ms %.1f\ntraced_ms %.1f\noverhead_ratio %.4f\n", b, t, t / b);
    } else {
      std::printf("sync_traced_ms %.1f\nsync_overhead_ratio %.4f\n", t, t / b);
    }
    std::printf("  [%s ingest] step %.2f ms; caller-thread CPU ratio %.4f; whole-process CPU (tracer thread included) %.4f; "
                "lookups recorded %llu of %llu, dropped %llu\n",
                mode, step_ms, tc / bc, tp / bc, static_cast<unsigned long long>(got), static_cast<unsigned long long>(expected),
                static_cast<unsigned long long>(dropped));
    if (got != expected) rc = 1;
  }
  return rc;
}
