// The C API's back ends (api_backends.cpp; never throw) and the ingest of device batches the
// CUDA side hands over.
#pragma once

#include <cstdint>

#include "edo/stats/table_stats.h"

namespace edo::capture {

int64_t api_register(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype,
                     int device);
int api_lookup(int64_t table, const void* indices, uint64_t count, int type, int device,
               void* stream);
int api_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes);
int api_step();

// Host ingest of device-index batches, called by the background thread (device_staging.cpp).
void ingest_indices(int64_t table, const void* indices, uint64_t count, int type);
// A segment of a table counted on the device (device_counting.cpp), into the session.
void ingest_counted(int64_t table, const stats::CountedSegment& segment);

}  // namespace edo::capture
