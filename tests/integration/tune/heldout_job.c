/* A C job whose caches' right answers are known by hand (issue 19 points 1 and 6), for
 * `edo record` + `edo tune` end to end (heldout_cli_test.cpp).
 *
 *   heldout_job
 *
 * Two 4096 x 16 fp32 host tables, 10 steps:
 *   scan  each step one pass over rows 0..999 (int64): an LRU of fewer than 1000 rows never
 *         hits (each row comes back after the 999 others), one of 1000 rows hits every
 *         reference after the first pass;
 *   late  each step 10 passes over 100 rows (int32): rows 0..99 in steps 0..6, rows
 *         100..199 in steps 7..9. The hot set of the first 70 % of the lookups (rows 0..99)
 *         hits nothing in the last 30 %; an LRU of 100 rows misses each new row once there
 *         (2900 of 3000 hit). */
#include <edo/edo.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static float scan_w[4096 * 16];
static float late_w[4096 * 16];

static void check(int64_t rc, const char* what) {
  if (rc < 0) {
    fprintf(stderr, "heldout_job: %s failed: %s\n", what, edo_strerror((int)rc));
    exit(99);
  }
}

int main(void) {
  const int64_t scan = edo_table_register("scan", scan_w, 4096, 16, EDO_F32, EDO_HOST);
  check(scan, "register scan");
  const int64_t late = edo_table_register("late", late_w, 4096, 16, EDO_F32, EDO_HOST);
  check(late, "register late");
  int64_t scan_idx[1000];
  int32_t late_idx[1000];
  for (int step = 0; step < 10; ++step) {
    for (int r = 0; r < 1000; ++r) scan_idx[r] = r;
    check(edo_table_lookup(scan, scan_idx, 1000, EDO_I64, EDO_HOST, NULL), "lookup scan");
    for (int k = 0; k < 1000; ++k) late_idx[k] = (step < 7 ? 0 : 100) + k % 100;
    check(edo_table_lookup(late, late_idx, 1000, EDO_I32, EDO_HOST, NULL), "lookup late");
    check(edo_step(), "step");
  }
  return 0;
}
