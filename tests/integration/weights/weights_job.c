/* A job with known weights and counts for weight-snapshot tests (run under `edo record`):
 *   big:   200000 x 8 f32 rows with a row stride of 12 floats (padding between rows);
 *          row r, column d holds r + d / 8. Row 7k (k < 600) is read 600 - k times, so the
 *          hottest rows are known; every row of 100000..100999 is read once.
 *   small: 300 x 4 f16 (dense), row r column d holds the half bits r * 4 + d.
 * Argument "bad" also checks the error codes of edo_table_weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edo/edo.h"

static void check(int rc, int want, const char* what) {
  if (rc != want) {
    fprintf(stderr, "weights_job: %s returned %d (%s), wanted %d\n", what, rc, edo_strerror(rc), want);
    exit(3);
  }
}

int main(int argc, char** argv) {
  const uint64_t rows = 200000, dim = 8, stride = 12;
  float* big = malloc(rows * stride * sizeof(float));
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t d = 0; d < stride; ++d) big[r * stride + d] = d < dim ? (float)r + (float)d / 8.0f : -1.0f;
  uint16_t* small = malloc(300 * 4 * sizeof(uint16_t));
  for (int i = 0; i < 300 * 4; ++i) small[i] = (uint16_t)i;

  const int64_t tb = edo_table_register("model.big", big, rows, (uint32_t)dim, EDO_F32, EDO_HOST);
  const int64_t ts = edo_table_register("model.small", small, 300, 4, EDO_F16, EDO_HOST);
  if (tb < 0 || ts < 0) return 2;
  int64_t batch[4096];
  int n = 0;
  for (int64_t k = 0; k < 600; ++k)
    for (int64_t c = 0; c < 600 - k; ++c) {
      batch[n++] = 7 * k;
      if (n == 4096) {
        check(edo_table_lookup(tb, batch, (uint64_t)n, EDO_I64, EDO_HOST, NULL), 0, "lookup");
        n = 0;
      }
    }
  for (int64_t r = 100000; r < 101000; ++r) {
    batch[n++] = r;
    if (n == 4096) {
      check(edo_table_lookup(tb, batch, (uint64_t)n, EDO_I64, EDO_HOST, NULL), 0, "lookup");
      n = 0;
    }
  }
  if (n) check(edo_table_lookup(tb, batch, (uint64_t)n, EDO_I64, EDO_HOST, NULL), 0, "lookup");
  int32_t s_idx[3] = {1, 2, 2};
  check(edo_table_lookup(ts, s_idx, 3, EDO_I32, EDO_HOST, NULL), 0, "lookup small");
  check(edo_step(), 0, "step");

  check(edo_table_weights(tb, big, stride * sizeof(float), EDO_HOST, NULL), 0, "weights big");
  check(edo_table_weights(ts, small, 0, EDO_HOST, NULL), 0, "weights small");
  if (argc > 1 && strcmp(argv[1], "bad") == 0) {
    check(edo_table_weights(99, big, 0, EDO_HOST, NULL), EDO_ERR_BAD_HANDLE, "bad handle");
    check(edo_table_weights(tb, NULL, 0, EDO_HOST, NULL), EDO_ERR_INVALID_ARGUMENT, "null weights");
    check(edo_table_weights(tb, big, 4, EDO_HOST, NULL), EDO_ERR_INVALID_ARGUMENT, "stride below a row");
    check(edo_table_weights(tb, big, 0, (edo_device)7, NULL), EDO_ERR_INVALID_ARGUMENT, "bad device");
  }
  /* The memory may change after the call: the snapshot was copied. */
  memset(big, 0, rows * stride * sizeof(float));
  puts("weights_job done");
  return 0;
}
