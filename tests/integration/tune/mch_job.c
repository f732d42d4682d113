/* A C job for managed-collision sizing (issue 35 points 4 and 5), for `edo record` + `edo tune`
 * end to end (mch_cli_test.cpp).
 *
 *   mch_job [--train-big] [IDS_FILE]
 *
 * Two host tables, 50 steps:
 *   ids  an id space of 2^30 rows x 128 fp32 (512 GiB as registered: edo sketches its counts),
 *        1000 ids a step from a skewed, slowly drifting popularity: rank = floor(20000 u^4) +
 *        40 x step (u uniform from a seeded xorshift64*), id = (rank + 1) x 0x9E3779B97F4A7C15
 *        mod 2^30 (an odd multiplier: distinct ranks are distinct ids). Far more distinct ids
 *        than a small budget affords rows: the managed-collision candidate's table.
 *   big  2^27 rows x 4 fp32 (2 GiB, larger than a host budget of 1 GiB), 1000 uniform ids a step.
 * With --train-big, big is trained with Adam: its state (exp_avg and exp_avg_sq, 2 GiB each) is
 * and its sparse gradient (1000 rows and their indices) are recorded as the table's extra bytes,
 * as edo's PyTorch hook records them (the
 * SSD tier for a trained table: ssd_tier_cli_test.cpp). The ids are the same either way.
 * With IDS_FILE, the ids table's ids are written there too (int64, little endian, in order),
 * for the test to replay exactly. The job never reads the rows (the tracer records lookups,
 * not values): one small buffer stands for both tables' weights. */
#include <edo/edo.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float weights[4096];
static uint64_t state = 0x2545F4914F6CDD1DULL;

static uint64_t next(void) { /* xorshift64* (Vigna) */
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

static void check(int64_t rc, const char* what) {
  if (rc < 0) {
    fprintf(stderr, "mch_job: %s failed: %s\n", what, edo_strerror((int)rc));
    exit(99);
  }
}

int main(int argc, char** argv) {
  const int train_big = argc > 1 && strcmp(argv[1], "--train-big") == 0;
  const char* ids_file = argc > 1 + train_big ? argv[1 + train_big] : NULL;
  FILE* out = ids_file ? fopen(ids_file, "wb") : NULL;
  if (ids_file && !out) {
    fprintf(stderr, "mch_job: cannot write %s\n", ids_file);
    return 98;
  }
  const int64_t ids = edo_table_register("ids", weights, UINT64_C(1) << 30, 128, EDO_F32, EDO_HOST);
  check(ids, "register ids");
  const int64_t big = edo_table_register("big", weights + 2048, UINT64_C(1) << 27, 4, EDO_F32, EDO_HOST);
  check(big, "register big");
  if (train_big) {
    check(edo_table_set_extra_bytes(big, "adam.exp_avg", UINT64_C(2) << 30), "extra bytes exp_avg");
    check(edo_table_set_extra_bytes(big, "adam.exp_avg_sq", UINT64_C(2) << 30), "extra bytes exp_avg_sq");
    /* A sparse gradient: the step's 1000 rows (16 bytes) and their int64 indices. */
    check(edo_table_set_extra_bytes(big, "grad", 1000 * (16 + 8)), "extra bytes grad");
  }
  int64_t idx[1000], bidx[1000];
  for (int step = 0; step < 50; ++step) {
    for (int k = 0; k < 1000; ++k) {
      const double u = (double)(next() >> 11) * 0x1.0p-53;
      const uint64_t rank = (uint64_t)(20000.0 * u * u * u * u) + 40u * (uint64_t)step;
      idx[k] = (int64_t)(((rank + 1) * 0x9E3779B97F4A7C15ULL) & ((UINT64_C(1) << 30) - 1));
    }
    check(edo_table_lookup(ids, idx, 1000, EDO_I64, EDO_HOST, NULL), "lookup ids");
    if (out && fwrite(idx, sizeof idx[0], 1000, out) != 1000) {
      fprintf(stderr, "mch_job: write failed\n");
      return 98;
    }
    for (int k = 0; k < 1000; ++k) bidx[k] = (int64_t)(next() & ((UINT64_C(1) << 27) - 1));
    check(edo_table_lookup(big, bidx, 1000, EDO_I64, EDO_HOST, NULL), "lookup big");
    check(edo_step(), "step");
  }
  if (out) fclose(out);
  return 0;
}
