// Built when the CUPTI headers are not available: no GPU capture at all.
#include "edo/edo.h"
#include "cuda_side.h"
#include "tracer_log.h"
#include "weights.h"

namespace edo::capture {
int cuda_lookup(int64_t, const void*, uint64_t, int, void*) { return EDO_ERR_NO_CUDA; }
void cuda_poll(bool) {}
void cuda_collect(bool) {}
bool cuda_owns_address(uint64_t) { return false; }
void cuda_before_fork() {}
void cuda_after_fork_parent() {}
void cuda_after_fork_child() {}
void cupti_start() { tracer_verbose("built without CUPTI headers: GPU capture is off; C API, NVTX and host lookups still work"); }
void cupti_flush() {}
void cupti_poll() {}
int cuda_read_rows(const void*, uint64_t, uint64_t, const std::vector<uint64_t>&, char*, void*) { return EDO_ERR_NO_CUDA; }
void cupti_release(const std::string&) {}
}  // namespace edo::capture
