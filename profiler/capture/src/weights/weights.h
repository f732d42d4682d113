// Weight snapshots (weights.cpp, and their device half in weights_cuda.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edo/wire/wire.h"

namespace edo::capture {

int api_table_weights(int64_t table, const void* weights, uint64_t row_stride, int device, void* stream);
// The flush tells it every delta it ships (EDO_WEIGHTS only) and takes its frames; weights.cpp
// reads a table's counts not shipped yet from the session.
void weights_note_delta(const wire::TableDelta& delta);
std::string weights_take_frames();
// Device rows for a snapshot (EDO_ERR_NO_CUDA without CUDA): copies the rows `sorted`
// (ascending) of the table at `base` (row `stride` bytes apart) into out[i * row_bytes] for
// sorted[i], after the work already queued on the job's `stream`, on a private stream (the
// job's streams are never synchronised).
int cuda_read_rows(const void* base, uint64_t stride, uint64_t row_bytes, const std::vector<uint64_t>& sorted,
                   char* out, void* stream);

}  // namespace edo::capture
