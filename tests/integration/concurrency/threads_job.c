/* A traced job that calls the C API from many threads at once, for the tracer's concurrency
 * tests (concurrency_test.cpp; `make tsan` runs them under ThreadSanitizer).
 *
 *   threads_job threads T N
 *       T threads start together. Thread k registers "thread.k" (1000 x 8 f32) and, for
 *       i = 0..N-1, reads row i % 1000 of it (1 + i % 64) times (int32 indices on even i,
 *       int64 on odd), reads row k of "shared.emb" (registered once by the main thread) once,
 *       sets its extra bytes to i, pushes and pops an NVTX range, and calls edo_step() every
 *       10th i. Meanwhile the main thread registers 20 more tables "late.m" on one weight
 *       tensor (late.1 .. late.19 are ties of late.0).
 *   threads_job fork T N
 *       the same T threads, and while they run the main thread forks 4 children one after the
 *       other; child c registers "child.c" (1000 x 8 f32), reads its row c 100 times and row
 *       999 of shared.emb 100 times, and exits. Exits 0 when every child did.
 *   threads_job ties T M
 *       T threads start together; thread k registers M tables "tie.k.m" (1000 x 8 f32), all on
 *       one weight tensor, reading row m of each once: T*M names, T*M - 1 of them ties of the
 *       first one registered, while the tracer flushes.
 *
 * The test computes the ground truth from these rules. */
#include <edo/edo.h>
#ifdef EDO_JOB_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 64

static float weights[MAX_THREADS][1000 * 8];
static float shared_weights[1000 * 8];
static float late_weights[1000 * 8];
static float child_weights[4][1000 * 8];
static float tie_weights[1000 * 8];
static int64_t shared_table;
static int iterations;
static pthread_barrier_t start;

static void check(long long rc, const char* what) {
  if (rc < 0) {
    fprintf(stderr, "threads_job: %s failed: %s\n", what, edo_strerror((int)rc));
    exit(99);
  }
}

static void* worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "thread.%d", k);
  pthread_barrier_wait(&start);
  const int64_t t = edo_table_register(name, weights[k], 1000, 8, EDO_F32, EDO_HOST);
  check(t, "register");
  int32_t idx32[64];
  int64_t idx64[64];
  const int64_t mine = k;
  for (int i = 0; i < iterations; ++i) {
    const int n = 1 + i % 64;
    for (int j = 0; j < n; ++j) {
      idx32[j] = i % 1000;
      idx64[j] = i % 1000;
    }
#ifdef EDO_JOB_NVTX
    nvtxRangePushA(i % 2 ? "odd" : "even");
#endif
    if (i % 2 == 0) check(edo_table_lookup(t, idx32, (uint64_t)n, EDO_I32, EDO_HOST, NULL), "lookup32");
    else check(edo_table_lookup(t, idx64, (uint64_t)n, EDO_I64, EDO_HOST, NULL), "lookup64");
#ifdef EDO_JOB_NVTX
    nvtxRangePop();
#endif
    check(edo_table_lookup(shared_table, &mine, 1, EDO_I64, EDO_HOST, NULL), "shared lookup");
    check(edo_table_set_extra_bytes(t, "adam.exp_avg", (uint64_t)i), "extra bytes");
    if (i % 10 == 9) check(edo_step(), "step");
  }
  return NULL;
}

static void* tie_worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  pthread_barrier_wait(&start);
  for (int m = 0; m < iterations; ++m) {
    char name[32];
    snprintf(name, sizeof name, "tie.%d.%d", k, m);
    const int64_t t = edo_table_register(name, tie_weights, 1000, 8, EDO_F32, EDO_HOST);
    check(t, "register tie");
    const int64_t row = m % 1000;
    check(edo_table_lookup(t, &row, 1, EDO_I64, EDO_HOST, NULL), "tie lookup");
  }
  return NULL;
}

static void child(int c) {
  char name[32];
  snprintf(name, sizeof name, "child.%d", c);
  const int64_t t = edo_table_register(name, child_weights[c], 1000, 8, EDO_F32, EDO_HOST);
  check(t, "child register");
  int64_t idx[100];
  for (int i = 0; i < 100; ++i) idx[i] = c;
  check(edo_table_lookup(t, idx, 100, EDO_I64, EDO_HOST, NULL), "child lookup");
  for (int i = 0; i < 100; ++i) idx[i] = 999;
  check(edo_table_lookup(shared_table, idx, 100, EDO_I64, EDO_HOST, NULL), "child shared lookup");
  exit(0);
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "threads") && strcmp(argv[1], "fork") && strcmp(argv[1], "ties"))) {
    fprintf(stderr, "usage: threads_job threads|fork|ties T N\n");
    return 2;
  }
  const int nthreads = atoi(argv[2]);
  iterations = atoi(argv[3]);
  if (nthreads < 1 || nthreads > MAX_THREADS) return 2;
  shared_table = edo_table_register("shared.emb", shared_weights, 1000, 8, EDO_F32, EDO_HOST);
  check(shared_table, "register shared");
  pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
  pthread_t tids[MAX_THREADS];
  const int ties = !strcmp(argv[1], "ties");
  for (int k = 0; k < nthreads; ++k) pthread_create(&tids[k], NULL, ties ? tie_worker : worker, (void*)(intptr_t)k);
  pthread_barrier_wait(&start);
  int bad = 0;
  if (!strcmp(argv[1], "threads")) {
    for (int m = 0; m < 20; ++m) {
      char name[32];
      snprintf(name, sizeof name, "late.%d", m);
      check(edo_table_register(name, late_weights, 1000, 8, EDO_F32, EDO_HOST), "register late");
    }
  } else if (!ties) {
    for (int c = 0; c < 4; ++c) {
      usleep(2000);
      const pid_t p = fork();
      if (p < 0) return 97;
      if (p == 0) child(c);
      int st = 0;
      waitpid(p, &st, 0);
      bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
  }
  for (int k = 0; k < nthreads; ++k) pthread_join(tids[k], NULL);
  printf("threads_job %s done\n", argv[1]);
  return bad;
}
