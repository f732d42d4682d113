// The storage under a directory, measured as an SSD-backed table would use it (issue 35 point 1):
// `edo bench --storage DIR`.
//
// A probe file of `file_bytes` is written under DIR (sequential, O_DIRECT: the sequential write
// bandwidth), synced, then read with O_DIRECT so that the page cache answers none of it:
//   * random 4 KiB reads at queue depth 1 and 32 (reads/s, and the mean and 99th percentile
//     latency at depth 1);
//   * random row-sized reads (`row_bytes`, rounded up to the whole aligned blocks that hold a
//     row: O_DIRECT reads whole logical blocks) at depth 1 and 32;
//   * sequential 1 MiB reads (GB/s).
// Queue depth Q is Q threads with one pread() in flight each (fio's psync engine with
// numjobs=Q): no io_uring or libaio is needed, and each figure says so. The file is removed at
// the end, also when a step fails.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace edo::kernels {

struct StorageProbeConfig {
  std::string dir;
  std::uint64_t file_bytes = std::uint64_t{1} << 30;  // larger than a drive's own cache is better
  std::uint32_t row_bytes = 512;                      // one embedding row (dim x element size)
  double seconds_per_test = 2.0;                      // each random-read test runs this long
  std::uint64_t seed = 42;
  std::function<void(const std::string&)> progress;   // one line per step, or none
};

struct StorageReads {
  double reads_per_s = 0;
  double mean_latency_us = 0;
  double p99_latency_us = 0;
  std::uint64_t reads = 0;
};

struct StorageFigures {
  std::string dir;
  std::uint64_t file_bytes = 0;
  std::uint32_t block_bytes = 0;     // the alignment O_DIRECT needed here (logical block size)
  std::uint32_t row_bytes = 0;
  std::uint32_t row_read_bytes = 0;  // what one row-sized read reads: whole aligned blocks
  StorageReads random_4k_qd1, random_4k_qd32, row_qd1, row_qd32;
  double seq_read_gbs = 0;
  double seq_write_gbs = 0;
  std::string method;                // how the queue depths were made, one line
};

// Throws std::runtime_error with one line naming the problem and the fix (DIR missing or not
// writable, a file system without O_DIRECT such as tmpfs, not enough space).
StorageFigures probe_storage(const StorageProbeConfig& c);

nlohmann::json storage_to_json(const StorageFigures& f);
// Throws std::invalid_argument naming a missing or non-positive field.
StorageFigures storage_from_json(const nlohmann::json& j, const std::string& where);
std::string storage_to_text(const StorageFigures& f);

}  // namespace edo::kernels
