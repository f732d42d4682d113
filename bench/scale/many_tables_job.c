/* A recommender's worth of tables through edo's C API (issue 31: `edo record` of 10,000 tables).
 *
 *   many_tables_job TABLES LOOKUPS_PER_TABLE TRUTH_FILE
 *
 * Table t is "feature.t": rows drawn from a production-like spread, most tables small and a few
 * with a million rows (log-uniform in [100, 1M], a fixed low-discrepancy sequence so every run is
 * the same job), 16 f32 columns at a made-up address (the tracer never reads a table's memory).
 * Its reads follow a power law with exponent 0.6..1.2 over ranks, mapped to rows by a
 * multiplicative permutation (hot rows spread over the table), in batches of 4,096 indices.
 * TRUTH_FILE gets one line per table, "name rows lookups unique_rows": what an exact count must
 * report. Prints its resident memory before the first edo call and at the end of main, then its
 * peak over the whole process, the tracer's exit-time counting and last flush included:
 *   rss_before_kib N rss_peak_kib M
 *   rss_exit_peak_kib P
 * The tracer counts what is still queued and sends its last deltas at exit, after main returns,
 * where a process can no longer read its own peak: the work runs in a child (this program again,
 * exec'd, a job process like any other) and this process reports the child's peak from wait4
 * (ru_maxrss). It calls no edo function itself: the recording lists it as a second session,
 * one without tables. */
#include <edo/edo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key));
  if (f) fclose(f);
  return v;
}

static uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int cmp_i64(const void* a, const void* b) {
  const int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static int work(char** argv);

int main(int argc, char** argv) {
  if (argc == 5 && !strcmp(argv[4], "--worker")) return work(argv);
  if (argc != 4) {
    fprintf(stderr, "usage: many_tables_job TABLES LOOKUPS_PER_TABLE TRUTH_FILE\n");
    return 2;
  }
  fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    perror("many_tables_job: fork");
    return 2;
  }
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], argv[1], argv[2], argv[3], "--worker", (char*)NULL);
    perror("many_tables_job: exec /proc/self/exe");
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) != pid) {
    perror("many_tables_job: wait4");
    return 2;
  }
  printf("rss_exit_peak_kib %ld\n", ru.ru_maxrss);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int work(char** argv) {
  const long tables = atol(argv[1]);
  const long per_table = atol(argv[2]);
  FILE* truth = fopen(argv[3], "w");
  if (tables <= 0 || per_table <= 0 || !truth) {
    fprintf(stderr, "many_tables_job: bad arguments or cannot write %s\n", argv[3]);
    return 2;
  }
  const long rss_before = status_kib("VmRSS:");
  enum { kBatch = 4096 };
  int64_t* all = malloc(sizeof(int64_t) * (size_t)per_table);
  long refused = 0;
  uint64_t seed = 42;
  for (long t = 0; t < tables; ++t) {
    const double u = fmod(0.6180339887498949 * (double)(t + 1), 1.0);
    const uint64_t rows = (uint64_t)(100.0 * pow(1e4, u));
    const double a = 0.6 + 0.6 * fmod(0.7548776662466927 * (double)(t + 1), 1.0);
    char name[32];
    snprintf(name, sizeof name, "feature.%ld", t);
    const uintptr_t base = (uintptr_t)0x200000000000ull + (uintptr_t)t * (uintptr_t)(1ull << 26);
    const int64_t h = edo_table_register(name, (const void*)base, rows, 16, EDO_F32, EDO_HOST);
    if (h < 0) {
      fprintf(stderr, "many_tables_job: register %s failed: %s\n", name, edo_strerror((int)h));
      return 3;
    }
    /* Continuous power-law inversion over [1, rows + 1): rank k has weight about k^-a. */
    const double top = pow((double)rows + 1.0, 1.0 - a);
    for (long i = 0; i < per_table; ++i) {
      const double v = (double)(splitmix(&seed) >> 11) * 0x1.0p-53;
      uint64_t rank = (uint64_t)pow(1.0 + v * (top - 1.0), 1.0 / (1.0 - a)) - 1;
      if (rank >= rows) rank = rows - 1;
      all[i] = (int64_t)((rank * 1000003ull) % rows); /* rows < 1000003: a permutation */
    }
    for (long i = 0; i < per_table; i += kBatch) {
      const uint64_t n = (uint64_t)(per_table - i < kBatch ? per_table - i : kBatch);
      const int rc = edo_table_lookup(h, all + i, n, EDO_I64, EDO_HOST, NULL);
      /* A batch the tracer's buffers had no room for (EDO_MAX_BUFFER_MB) is dropped and counted
         by edo; a job carries on, and check_truth.py names the tables it is missing from. */
      if (rc == EDO_ERR_NO_MEMORY) {
        refused += (long)n;
        continue;
      }
      if (rc != EDO_OK) {
        fprintf(stderr, "many_tables_job: lookup of %s failed: %s\n", name, edo_strerror(rc));
        return 4;
      }
    }
    qsort(all, (size_t)per_table, sizeof(int64_t), cmp_i64);
    long unique = 0;
    for (long i = 0; i < per_table; ++i) unique += i == 0 || all[i] != all[i - 1];
    fprintf(truth, "%s %llu %ld %ld\n", name, (unsigned long long)rows, per_table, unique);
  }
  fclose(truth);
  if (refused) fprintf(stderr, "many_tables_job: %ld lookups dropped by the tracer (buffers full)\n", refused);
  printf("rss_before_kib %ld rss_peak_kib %ld\n", rss_before, status_kib("VmHWM:"));
  free(all);
  return 0;
}
