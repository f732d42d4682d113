// The C entry of the PyTorch hooks alone: what one edo_table_lookup of 768 int64 ids costs the
// caller (issue 32 point 1: the whole hook path, Python included, has 3 us).
//
// Linked against libedo_trace.so (no LD_PRELOAD); the binary re-execs itself with EDO_OUTPUT
// set, so the tracer is active with its default settings (async ingest: the ids are copied into
// the ingest queue and counted on the tracer's thread). Two paces, each timed per call
// (CLOCK_MONOTONIC around the call, median and p10/p90 of --calls calls) with the minor page
// faults the calls took (getrusage of the calling thread, read outside the timed region):
//   * job pace: between calls a gather of the 768 rows (64 floats each) of a 100k-row table,
//     as an embedding forward does (the job's caches and the tracer's thread as in percall.py);
//   * back to back: nothing between calls (the tracer's thread falls behind: the queue grows,
//     and batches beyond EDO_MAX_BUFFER_MB are dropped and counted as failed calls).
// A page fault per call or more means the queue's buffers are fresh memory (the tracer's
// thread is behind and the recycled buffers are in use): the cost is then the kernel's.
//
// Usage: bench_lookup_entry [--calls N]
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "edo/edo.h"

namespace {

constexpr uint64_t kRows = 100'000;
constexpr uint32_t kDim = 64;
constexpr uint64_t kIds = 768;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

long minor_faults() {
  rusage r{};
  getrusage(RUSAGE_THREAD, &r);
  return r.ru_minflt;
}

struct Pace {
  std::vector<uint64_t> ns;
  long faults = 0;
  long failed = 0;
};

// `gather`: the job's own work between calls (a sum over the rows the ids name).
Pace run(int64_t table, const std::vector<float>& weights, const std::vector<int64_t>& ids, int calls,
         bool gather, float* sink) {
  Pace p;
  p.ns.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    if (gather)
      for (int64_t id : ids)
        for (uint32_t d = 0; d < kDim; d += 16) *sink += weights[size_t(id) * kDim + d];
    const long f0 = minor_faults();
    const uint64_t t0 = now_ns();
    const int rc = edo_table_lookup(table, ids.data(), ids.size(), EDO_I64, EDO_HOST, nullptr);
    const uint64_t t1 = now_ns();
    p.faults += minor_faults() - f0;
    p.failed += rc != EDO_OK;
    p.ns.push_back(t1 - t0);
  }
  std::sort(p.ns.begin(), p.ns.end());
  return p;
}

void print(const char* pace, const Pace& p) {
  const size_t n = p.ns.size();
  std::printf("edo_table_lookup, %llu ids, %s: median_ns %llu  p10_ns %llu  p90_ns %llu  "
              "page_faults_per_call %.2f  failed %ld of %zu\n",
              static_cast<unsigned long long>(kIds), pace, static_cast<unsigned long long>(p.ns[n / 2]),
              static_cast<unsigned long long>(p.ns[n / 10]), static_cast<unsigned long long>(p.ns[n * 9 / 10]),
              double(p.faults) / double(n), p.failed, n);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "bench_lookup_entry: unknown argument %s (usage: bench_lookup_entry [--calls N])\n", argv[i]);
      return 2;
    }
  }
  if (calls < 10) {
    std::fprintf(stderr, "bench_lookup_entry: --calls must be at least 10\n");
    return 2;
  }
  if (!std::getenv("EDO_OUTPUT")) {
    // The tracer reads its settings when the library loads: set them, then start again.
    const std::string out = "/tmp/edo-lookup-entry-" + std::to_string(getpid()) + ".edotrace";
    setenv("EDO_OUTPUT", out.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("bench_lookup_entry: re-exec");
    return 1;
  }
  std::vector<float> weights(kRows * kDim, 1.0f);
  const int64_t table = edo_table_register("bench.lookup_entry", weights.data(), kRows, kDim, EDO_F32, EDO_HOST);
  if (table < 0) {
    std::fprintf(stderr, "bench_lookup_entry: edo_table_register failed: %s\n", edo_strerror(int(table)));
    return 1;
  }
  std::vector<int64_t> ids(kIds);
  uint64_t x = 88172645463325252ull;  // xorshift: the same ids every run
  for (int64_t& id : ids) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    id = int64_t(x % kRows);
  }
  float sink = 0;
  run(table, weights, ids, std::min(calls, 1000), true, &sink);  // warm-up
  const Pace job = run(table, weights, ids, calls, true, &sink);
  const Pace tight = run(table, weights, ids, calls, false, &sink);
  print("job pace", job);
  print("back to back", tight);
  std::printf("(checksum %g)\n", double(sink));
  unlink(std::getenv("EDO_OUTPUT"));
  return 0;
}
