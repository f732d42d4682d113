/* A traced job for the fault tests (faults_test.cpp): it records through the C API and says on
 * stdout what it has done and when, so that a test that kills it, fills the disk under the
 * collector or runs many copies at once can tell what the database must hold.
 *
 *   fault_job rounds R PER SLEEP_MS [FAULT_AT]
 *       table "fault.rows" (1000 x 16 f32). Round k (0-based) reads row k PER times in one
 *       call, calls edo_step(), prints "round k T" (T: CLOCK_MONOTONIC in ns, after the
 *       lookup returned) and sleeps SLEEP_MS. With FAULT_AT, round FAULT_AT ends in a real
 *       memory fault (a write to a read-only page: SIGSEGV). Prints "done" and exits 0.
 *       With FAULT_JOB_GO=PATH in the environment the fault waits until PATH exists: the test
 *       creates it once the recording holds what it checks is kept (an event, not a time).
 *   fault_job grow TABLES ROWS SLEEP_MS
 *       every round registers table "grow.K" (ROWS x 4 f32) and reads each of its rows once,
 *       prints "round K T", sleeps SLEEP_MS; the database grows by ROWS counts per round.
 *   fault_job ranks N
 *       N processes record at once into the same collector, started together (a pipe is the
 *       start barrier): the first N/2 are forked workers of this process (they inherit its
 *       registration of "shared.emb", 64 x 8 f32), the others fork and exec "fault_job rank K"
 *       (they register it themselves, like torchrun ranks). Process K reads row K of
 *       shared.emb (K+1)*100 times in 10 batches with an edo_step() after each. Exits 0 when
 *       every process did, else 1.
 *   fault_job early_fault
 *       registers "early.emb", reads row 7 once and faults at once (SIGSEGV), before the
 *       tracer's first flush.
 *
 * Output goes through write(2) unbuffered, so a line printed before a kill is never lost. */
#include <edo/edo.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static float weights[1000 * 16];

static void say(const char* fmt, long long a, long long b) {
  char line[128];
  int n = snprintf(line, sizeof line, fmt, a, b);
  if (write(1, line, (size_t)n) != n) _exit(98);
}

static void say_done(void) {
  if (write(1, "done\n", 5) != 5) _exit(98);
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void check(long long rc, const char* what) {
  if (rc < 0) {
    fprintf(stderr, "fault_job: %s failed: %s\n", what, edo_strerror((int)rc));
    exit(99);
  }
}

/* A memory fault the job makes itself, the way a bug would: no raise(), no null pointer
 * (sanitizers would report that first). */
static void memory_fault(void) {
  volatile char* page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  page[0] = 1;
}

/* Until the file FAULT_JOB_GO names exists (when set); the test removes the job if it never does. */
static void wait_for_go(void) {
  const char* go = getenv("FAULT_JOB_GO");
  if (!go || !*go) return;
  while (access(go, F_OK) != 0) sleep_ms(10);
}

static int rounds(int r, int per, int sleep, int fault_at) {
  int64_t t = edo_table_register("fault.rows", weights, 1000, 16, EDO_F32, EDO_HOST);
  check(t, "register");
  int64_t* idx = malloc(sizeof(int64_t) * (size_t)per);
  for (int k = 0; k < r; ++k) {
    for (int i = 0; i < per; ++i) idx[i] = k % 1000;
    check(edo_table_lookup(t, idx, (uint64_t)per, EDO_I64, EDO_HOST, NULL), "lookup");
    check(edo_step(), "step");
    say("round %lld %lld\n", k, now_ns());
    if (k == fault_at) {
      wait_for_go();
      memory_fault();
    }
    sleep_ms(sleep);
  }
  free(idx);
  say_done();
  return 0;
}

static int grow(int tables, long rows, int sleep) {
  float* w = calloc((size_t)rows * 4, sizeof(float));
  int32_t* idx = malloc(sizeof(int32_t) * (size_t)rows);
  for (long i = 0; i < rows; ++i) idx[i] = (int32_t)i;
  for (int k = 0; k < tables; ++k) {
    char name[32];
    snprintf(name, sizeof name, "grow.%d", k);
    /* distinct base pointers, so no table is taken for a tie of another */
    int64_t t = edo_table_register(name, (char*)w + k, (uint64_t)rows, 4, EDO_F32, EDO_HOST);
    check(t, "register");
    check(edo_table_lookup(t, idx, (uint64_t)rows, EDO_I32, EDO_HOST, NULL), "lookup");
    say("round %lld %lld\n", k, now_ns());
    sleep_ms(sleep);
  }
  free(idx);
  free(w);
  say_done();
  return 0;
}

static void rank_work(int k, int64_t t) {
  int64_t idx[100];
  for (int i = 0; i < 100; ++i) idx[i] = k;
  for (int b = 0; b < 10; ++b) {
    check(edo_table_lookup(t, idx, (uint64_t)(k + 1) * 10, EDO_I64, EDO_HOST, NULL), "rank lookup");
    check(edo_step(), "rank step");
  }
}

static int ranks(const char* self, int n) {
  int64_t t = edo_table_register("shared.emb", weights, 64, 8, EDO_F32, EDO_HOST);
  check(t, "register");
  int gate[2];
  if (pipe(gate) != 0) return 97;
  pid_t* kids = calloc((size_t)n, sizeof(pid_t));
  for (int k = 0; k < n; ++k) {
    kids[k] = fork();
    if (kids[k] < 0) return 97;
    if (kids[k] == 0) {
      char c;
      close(gate[1]);
      if (read(gate[0], &c, 1) < 0) _exit(96); /* returns 0 when the parent opens the gate */
      if (k < n / 2) {
        rank_work(k, t);
        exit(0);
      }
      char ks[16];
      snprintf(ks, sizeof ks, "%d", k);
      execl(self, self, "rank", ks, (char*)NULL);
      _exit(95);
    }
  }
  close(gate[0]);
  close(gate[1]); /* every process starts now */
  int bad = 0;
  for (int k = 0; k < n; ++k) {
    int st = 0;
    waitpid(kids[k], &st, 0);
    bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  free(kids);
  say_done();
  return bad;
}

/* fault_job ranges: the C API given values out of range (issue 30 §9), each call's return code
 * printed as "NAME CODE": a negative row count or batch passed as unsigned, a shape whose bytes
 * overflow, extra bytes of ~0; then one valid table "ok.emb" (10 x 4 f32) with 64 extra bytes of
 * kind "adam.exp_avg" and 3 lookups. */
static int ranges(void) {
  static int64_t rows3[3] = {0, 1, 2};
  char line[128];
  int n;
#define SAY(name, expr)                                                  \
  n = snprintf(line, sizeof line, "%s %lld\n", name, (long long)(expr)); \
  if (write(1, line, (size_t)n) != n) _exit(98);
  SAY("register_negative_rows", edo_table_register("bad.rows", weights, (uint64_t)-1, 16, EDO_F32, EDO_HOST));
  SAY("register_overflow", edo_table_register("bad.bytes", weights + 1, (uint64_t)1 << 40, 1u << 30, EDO_F32, EDO_HOST));
  const int64_t t = edo_table_register("ok.emb", weights + 2, 10, 4, EDO_F32, EDO_HOST);
  SAY("register_ok", t >= 0 ? 0 : t);
  SAY("extra_all_ones", edo_table_set_extra_bytes(t, "adam.exp_avg", ~(uint64_t)0));
  SAY("extra_2_57", edo_table_set_extra_bytes(t, "adam.exp_avg", (uint64_t)1 << 57));
  SAY("extra_ok", edo_table_set_extra_bytes(t, "adam.exp_avg", 64));
  SAY("lookup_negative_count", edo_table_lookup(t, rows3, (uint64_t)-3, EDO_I64, EDO_HOST, NULL));
  SAY("lookup_ok", edo_table_lookup(t, rows3, 3, EDO_I64, EDO_HOST, NULL));
#undef SAY
  say_done();
  return 0;
}

/* Registers a table, reads one row and faults at once: the tracer connected to the collector at
 * the registration, and the process dies before its background thread's first flush (it looks
 * every 20 ms). Issue 30 §6: such a process left no session at all. */
static int early_fault(void) {
  int64_t t = edo_table_register("early.emb", weights, 1000, 16, EDO_F32, EDO_HOST);
  check(t, "register");
  const int64_t row = 7;
  check(edo_table_lookup(t, &row, 1, EDO_I64, EDO_HOST, NULL), "lookup");
  memory_fault();
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "rounds") && argc >= 5)
    return rounds(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argc > 5 ? atoi(argv[5]) : -1);
  if (!strcmp(mode, "grow") && argc == 5) return grow(atoi(argv[2]), atol(argv[3]), atoi(argv[4]));
  if (!strcmp(mode, "ranks") && argc == 3) return ranks(argv[0], atoi(argv[2]));
  if (!strcmp(mode, "ranges") && argc == 2) return ranges();
  if (!strcmp(mode, "early_fault") && argc == 2) return early_fault();
  if (!strcmp(mode, "rank") && argc == 3) {
    int k = atoi(argv[2]);
    int64_t t = edo_table_register("shared.emb", weights, 64, 8, EDO_F32, EDO_HOST);
    check(t, "register");
    rank_work(k, t);
    return 0;
  }
  fprintf(stderr, "usage: fault_job rounds R PER SLEEP_MS [FAULT_AT] | grow TABLES ROWS SLEEP_MS | ranks N | ranges | early_fault\n");
  return 2;
}
