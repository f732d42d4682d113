/* A job with many small tables, for the tracer's memory budget (issue 30 point 7: small tables
 * are counted exactly, whatever their number and whichever thread registers them).
 *
 *   small_tables_job TABLES ROWS THREADS UPFRONT
 *
 * THREADS threads start together; thread k takes the tables t = k, k + THREADS, ... < TABLES.
 * Table t is "small.t", ROWS rows x 4 f32 at a made-up address of its own (the tracer never
 * reads a table's memory, so none is allocated). Its batch reads row r (1 + (t + r) % 3)
 * times, rows in order, in one batch (int64 indices for even t, int32 for odd t). UPFRONT 1: a
 * thread registers all its tables, then reads each; 0: it reads each table right after
 * registering it (the tracer places tables while others are still being registered).
 * Waits 1 s for the tracer's flushes and prints its resident memory before the first edo call
 * and at its peak:
 *   rss_before_kib N rss_peak_kib M
 * The test computes the ground truth from these rules. */
#include <edo/edo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int tables, rows, threads, upfront;
static pthread_barrier_t start;

static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key));
  if (f) fclose(f);
  return v;
}

static int64_t register_table(int t) {
  char name[32];
  snprintf(name, sizeof name, "small.%d", t);
  const uintptr_t base = (uintptr_t)0x200000000000ull + (uintptr_t)t * (uintptr_t)(1u << 20);
  const int64_t h = edo_table_register(name, (const void*)base, (uint64_t)rows, 4, EDO_F32, EDO_HOST);
  if (h < 0) {
    fprintf(stderr, "small_tables_job: register %s failed: %s\n", name, edo_strerror((int)h));
    exit(3);
  }
  return h;
}

static void read_table(int64_t h, int t) {
  int64_t* i64 = malloc(sizeof(int64_t) * 3 * (size_t)rows);
  int32_t* i32 = malloc(sizeof(int32_t) * 3 * (size_t)rows);
  uint64_t n = 0;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < 1 + (t + r) % 3; ++k) i64[n] = r, i32[n] = r, ++n;
  /* No retry: a batch the tracer drops is counted, and the test expects none. */
  const int rc = t % 2 == 0 ? edo_table_lookup(h, i64, n, EDO_I64, EDO_HOST, NULL)
                            : edo_table_lookup(h, i32, n, EDO_I32, EDO_HOST, NULL);
  if (rc != EDO_OK) {
    fprintf(stderr, "small_tables_job: lookup of small.%d failed: %s\n", t, edo_strerror(rc));
    exit(4);
  }
  free(i64);
  free(i32);
}

static void* worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  const int mine = (tables - k + threads - 1) / threads;
  int64_t* handles = malloc(sizeof(int64_t) * (size_t)(mine > 0 ? mine : 1));
  pthread_barrier_wait(&start);
  for (int j = 0; j < mine; ++j) {
    handles[j] = register_table(k + j * threads);
    if (!upfront) read_table(handles[j], k + j * threads);
  }
  if (upfront)
    for (int j = 0; j < mine; ++j) read_table(handles[j], k + j * threads);
  free(handles);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: small_tables_job TABLES ROWS THREADS UPFRONT\n");
    return 2;
  }
  tables = atoi(argv[1]), rows = atoi(argv[2]), threads = atoi(argv[3]), upfront = atoi(argv[4]);
  if (tables < 1 || rows < 1 || threads < 1 || threads > 256) return 2;
  const long before = status_kib("VmRSS:");
  pthread_t tid[256];
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int k = 0; k < threads; ++k) pthread_create(&tid[k], NULL, worker, (void*)(intptr_t)k);
  for (int k = 0; k < threads; ++k) pthread_join(tid[k], NULL);
  struct timespec ts = {1, 0}; /* the tracer's flushes (EDO_FLUSH_MS=200) count what is queued */
  nanosleep(&ts, NULL);
  printf("rss_before_kib %ld rss_peak_kib %ld\n", before, status_kib("VmHWM:"));
  return 0;
}
