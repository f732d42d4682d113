/* edo C API: register embedding tables and count the rows a job reads.
 *
 * Link with -ledo_trace (build/lib/libedo_trace.so) or run under `edo record`, which
 * preloads the library. Without `edo record` or EDO_OUTPUT set, every call is a cheap no-op
 * that returns 0 (or a handle), so instrumented programs run unchanged.
 * All functions are thread-safe and never throw.
 */
#ifndef EDO_EDO_H
#define EDO_EDO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EDO_API __attribute__((visibility("default")))
#else
#define EDO_API
#endif

typedef enum { EDO_F32, EDO_F16, EDO_BF16, EDO_I8, EDO_U8, EDO_F8E4M3 } edo_dtype;
typedef enum { EDO_I32, EDO_I64 } edo_index_type;
typedef enum { EDO_HOST, EDO_CUDA } edo_device;

/* Error codes (negative). */
enum {
  EDO_OK = 0,
  EDO_ERR_INVALID_ARGUMENT = -1, /* null name, zero rows or dim, bad enum value, or a value out of
                                    range: rows > 2^48, rows x dim x element size > 2^56 bytes, a
                                    lookup batch > 2^48 indices, extra bytes > 2^56 (a negative
                                    number passed as unsigned): refused, never recorded */
  EDO_ERR_BAD_HANDLE = -2,       /* table handle not returned by edo_table_register */
  EDO_ERR_NO_MEMORY = -3,        /* bounded buffers full: the batch was dropped and counted */
  EDO_ERR_NO_CUDA = -4,          /* device indices given but no CUDA runtime is usable */
  EDO_ERR_CUDA = -5,             /* a CUDA call failed (copying device indices) */
  EDO_ERR_SHAPE_MISMATCH = -6    /* same name registered again with another shape */
};

/* Returns a table handle >= 0, or a negative edo error code. Registering the same
   base pointer under a second name records a tie (shared weights). */
EDO_API int64_t edo_table_register(const char* name, const void* base, uint64_t rows,
                                   uint32_t dim, edo_dtype dtype, edo_device device);
/* Count one batch of row ids read from a table. Device indices are counted on the
   device, by a kernel edo launches on `stream` (cudaStream_t, may be NULL) after the
   caller's work; the call never blocks on the GPU. Returns 0 or a negative edo error code. */
EDO_API int edo_table_lookup(int64_t table, const void* indices, uint64_t count,
                             edo_index_type type, edo_device device, void* stream);
/* Records memory that belongs to a table besides its weights: kind "grad" (or
   "grad.<anything>") is the table's gradient and is reported as grad_bytes; every other
   kind ("adam.exp_avg", "adagrad.sum", ...) is optimizer state (optimizer_bytes).
   Calling it again with the same kind replaces that kind's bytes. Returns 0 or a
   negative edo error code. */
EDO_API int edo_table_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes);
/* Hands over a table's current weights for a weight snapshot (edo record --weights, or
   EDO_WEIGHTS=1; otherwise a no-op returning 0). `weights` points at rows x dim elements of the
   registered dtype, row r at weights + r * row_stride bytes (row_stride 0: rows are dense), in
   host memory or, with device EDO_CUDA, in device memory (read after the work queued on
   `stream`, cudaStream_t, may be NULL, on a stream of the tracer's own: the job's streams are
   never synchronised). The tracer keeps the hottest rows by count so far and a uniform sample
   of the rest (EDO_WEIGHT_ROWS rows, default 65536) and copies them before returning, so the
   memory may change afterwards. Call it whenever the weights are worth keeping (after
   training); a later call replaces the table's snapshot. Returns 0 or a negative edo error
   code. */
EDO_API int edo_table_weights(int64_t table, const void* weights, uint64_t row_stride, edo_device device,
                              void* stream);
/* Marks one training/serving step. */
EDO_API int edo_step(void);
/* Hands edo's GPU capture (CUPTI) over to another tool that needs it now, e.g.
   torch.profiler about to trace CUDA (edo's PyTorch hook calls this): only one CUPTI client
   can exist in a process. GPU allocations and kernels are not traced from then on; tables,
   lookups and NVTX ranges still are. `tool` is named in the one warning line and in the
   recording. Returns 0. */
EDO_API int edo_release_gpu_capture(const char* tool);
/* Records a fact about the job as a key/value pair in the recording's metadata (a later call
   with the same key replaces the value), e.g. the PyTorch hook's "torchrec.table.NAME" notes.
   key: 1-256 bytes, not starting with "edo." (the tracer's own); value: at most 64 KiB.
   Returns 0 or EDO_ERR_INVALID_ARGUMENT. */
EDO_API int edo_note(const char* key, const char* value);
/* A static, human-readable description of an edo error code. */
EDO_API const char* edo_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* EDO_EDO_H */
