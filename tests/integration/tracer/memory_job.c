/* A job with many large tables, for the tracer's memory bound.
 *
 *   memory_job TABLES ROWS LOOKUPS_PER_TABLE
 *
 * Registers TABLES tables of ROWS rows x 16 f32 at made-up addresses (the tracer never reads
 * a table's memory, so none is allocated), reads LOOKUPS_PER_TABLE uniformly random rows of
 * each (in batches of 65536, round robin), waits 1 s for the tracer's flushes, and prints its
 * resident memory before the first edo call and at its peak:
 *   rss_before_kib N rss_peak_kib M
 */
#include <edo/edo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key));
  if (f) fclose(f);
  return v;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const int tables = atoi(argv[1]);
  const uint64_t rows = strtoull(argv[2], NULL, 10), per_table = strtoull(argv[3], NULL, 10);
  static int64_t idx[65536];
  int64_t* handles = malloc(sizeof(int64_t) * (size_t)tables);
  const long before = status_kib("VmRSS:");
  for (int t = 0; t < tables; ++t) {
    char name[32];
    snprintf(name, sizeof name, "table_%d", t);
    const uintptr_t base = (uintptr_t)0x100000000000ull + (uintptr_t)t * (uintptr_t)(rows * 64);
    handles[t] = edo_table_register(name, (const void*)base, rows, 16, EDO_F32, EDO_HOST);
    if (handles[t] < 0) return 3;
  }
  uint64_t x = 88172645463325252ull;
  for (uint64_t done = 0; done < per_table; done += 65536)
    for (int t = 0; t < tables; ++t) {
      for (int i = 0; i < 65536; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        idx[i] = (int64_t)(x % rows);
      }
      while (edo_table_lookup(handles[t], idx, 65536, EDO_I64, EDO_HOST, NULL) == EDO_ERR_NO_MEMORY) {
        struct timespec ts = {0, 1000000};  /* the queue is full: let the tracer catch up */
        nanosleep(&ts, NULL);
      }
    }
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  printf("rss_before_kib %ld rss_peak_kib %ld\n", before, status_kib("VmHWM:"));
  free(handles);
  return 0;
}
