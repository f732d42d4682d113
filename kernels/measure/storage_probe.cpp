// `edo bench --storage DIR`: see edo/kernels/storage_probe.h.
#include "edo/kernels/storage_probe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace edo::kernels {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kSmallRead = 4096;
constexpr std::uint32_t kSeqChunk = 1u << 20;

std::string sized(double bytes) {
  char buf[64];
  if (bytes >= double(1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  else if (bytes >= double(1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%.0f KiB", bytes / 1024.0);
  return buf;
}

// Memory aligned for O_DIRECT (whole blocks at an aligned address: open(2), "O_DIRECT").
struct AlignedBuffer {
  void* p = nullptr;
  AlignedBuffer(std::size_t align, std::size_t bytes) {
    if (posix_memalign(&p, align, bytes) != 0) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(p); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

// The probe file: closed and removed whatever happens.
struct ProbeFile {
  std::string path;
  int fd = -1;
  ~ProbeFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error("--storage: " + why); }

// Reads of `len` bytes at random multiples of `align` within the file, by `depth` threads with
// one read in flight each, for `seconds`. Latencies are kept at depth 1 (mean and 99th
// percentile); at larger depths the mean is the threads' busy time per read.
StorageReads random_reads(int fd, std::uint64_t file_bytes, std::uint32_t len, std::uint32_t align, int depth,
                          double seconds, std::uint64_t seed) {
  const std::uint64_t slots = (file_bytes - len) / align + 1;
  std::atomic<bool> failed{false};
  std::atomic<int> error{0};
  struct Result {
    std::uint64_t reads = 0;
    double busy_us = 0;
    std::vector<float> latencies_us;
  };
  std::vector<Result> results(static_cast<std::size_t>(depth));
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto started = Clock::now();
  auto worker = [&](int t) {
    AlignedBuffer buf(align, len);
    std::mt19937_64 rng(seed * 7919 + std::uint64_t(t));
    Result& r = results[std::size_t(t)];
    if (depth == 1) r.latencies_us.reserve(1 << 16);
    while (!failed.load(std::memory_order_relaxed)) {
      const auto t0 = Clock::now();
      if (t0 >= until) break;
      const off_t at = off_t((rng() % slots) * align);
      const ssize_t n = ::pread(fd, buf.p, len, at);
      const auto t1 = Clock::now();
      if (n != ssize_t(len)) {
        error.store(n < 0 ? errno : EIO);
        failed.store(true);
        break;
      }
      const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
      ++r.reads;
      r.busy_us += us;
      if (depth == 1 && r.latencies_us.size() < (1u << 22)) r.latencies_us.push_back(float(us));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < depth; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& th : threads) th.join();
  const double wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  if (failed.load()) fail(std::string("a read failed: ") + std::strerror(error.load()));
  StorageReads out;
  double busy = 0;
  std::vector<float> lat;
  for (auto& r : results) {
    out.reads += r.reads;
    busy += r.busy_us;
    lat.insert(lat.end(), r.latencies_us.begin(), r.latencies_us.end());
  }
  if (out.reads == 0) fail("no read finished in " + std::to_string(seconds) + " s; give more --storage-seconds");
  out.reads_per_s = double(out.reads) / wall_s;
  out.mean_latency_us = busy / double(out.reads);
  if (!lat.empty()) {
    const std::size_t k = std::min(lat.size() - 1, std::size_t(std::ceil(0.99 * double(lat.size()))) - 1);
    std::nth_element(lat.begin(), lat.begin() + std::ptrdiff_t(k), lat.end());
    out.p99_latency_us = lat[k];
  }
  return out;
}

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0))
    throw std::invalid_argument(where + ": storage." + key + " is missing or not a positive number");
  return j[key].get<double>();
}

nlohmann::json reads_to_json(const StorageReads& r) {
  return {{"reads_per_s", r.reads_per_s}, {"mean_latency_us", r.mean_latency_us}, {"p99_latency_us", r.p99_latency_us},
          {"reads", r.reads}};
}

StorageReads reads_from_json(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_object()) throw std::invalid_argument(where + ": storage." + key + " is missing");
  const auto& r = j[key];
  StorageReads out;
  out.reads_per_s = number(r, "reads_per_s", where + ": storage." + key);
  out.mean_latency_us = number(r, "mean_latency_us", where + ": storage." + key);
  out.p99_latency_us = r.value("p99_latency_us", 0.0);
  out.reads = r.value("reads", std::uint64_t{0});
  return out;
}

}  // namespace

StorageFigures probe_storage(const StorageProbeConfig& c) {
  struct stat st{};
  if (c.dir.empty() || ::stat(c.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail("'" + c.dir + "' is not a directory; give a directory on the drive to measure (e.g. the SSD's mount point)");
  if (c.row_bytes == 0) fail("the row size is 0 bytes");
  // A file system in memory answers O_DIRECT (tmpfs does since Linux 6.6) at memory speed: not a
  // drive's figures. (statfs(2): TMPFS_MAGIC 0x01021994, RAMFS_MAGIC 0x858458f6.)
  struct statfs fs{};
  if (::statfs(c.dir.c_str(), &fs) == 0 && (fs.f_type == 0x01021994 || fs.f_type == long(0x858458f6)))
    fail(c.dir + " is in memory (tmpfs or ramfs), not on a drive; give a directory on the SSD");
  // O_DIRECT needs reads of whole logical blocks at aligned offsets: the file system's block
  // size (st_blksize, 4 KiB on ext4 and xfs) is a multiple of the device's logical block.
  std::uint32_t align = kSmallRead;
  if (st.st_blksize > 0 && (st.st_blksize & (st.st_blksize - 1)) == 0 && st.st_blksize <= (1 << 16))
    align = std::max<std::uint32_t>(align, std::uint32_t(st.st_blksize));
  const std::uint32_t row_read = std::uint32_t((std::uint64_t(c.row_bytes) + align - 1) / align * align);
  const std::uint64_t need = std::max<std::uint64_t>(c.file_bytes / kSeqChunk * kSeqChunk, kSeqChunk);
  if (need < std::uint64_t(row_read) * 2) fail("the probe file (" + sized(double(need)) + ") is smaller than two rows");
  struct statvfs vfs{};
  if (::statvfs(c.dir.c_str(), &vfs) == 0) {
    const double avail = double(vfs.f_bavail) * double(vfs.f_frsize);
    if (avail < double(need) + double(64ull << 20))
      fail("not enough space under " + c.dir + " for a " + sized(double(need)) + " probe file (" + sized(avail) +
           " free); lower --storage-bytes or free space");
  }

  ProbeFile file;
  file.path = c.dir + (c.dir.back() == '/' ? "" : "/") + ".edo-storage-probe." + std::to_string(::getpid());
  file.fd = ::open(file.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0600);
  if (file.fd < 0) {
    const int err = errno;
    if (err == EINVAL)
      fail(c.dir + " is on a file system without O_DIRECT (tmpfs or a network share?): its reads would be the page "
                   "cache's, not the drive's; give a directory on the SSD");
    file.path.clear();  // nothing of ours to remove
    fail("cannot create a probe file in " + c.dir + ": " + std::strerror(err) + " (give a writable directory)");
  }

  StorageFigures f;
  f.dir = c.dir;
  f.file_bytes = need;
  f.block_bytes = align;
  f.row_bytes = c.row_bytes;
  f.row_read_bytes = row_read;
  f.method = "O_DIRECT pread(); queue depth Q = Q threads with one read in flight each (fio's psync engine with numjobs=Q)";

  // Sequential write of random bytes (a drive that compresses or deduplicates cannot shortcut
  // them), then fdatasync: the write bandwidth, and the file the reads use.
  if (c.progress) c.progress("storage: writing a " + sized(double(need)) + " probe file in " + c.dir);
  {
    AlignedBuffer buf(align, kSeqChunk);
    std::mt19937_64 rng(c.seed);
    auto* words = static_cast<std::uint64_t*>(buf.p);
    const auto t0 = Clock::now();
    for (std::uint64_t off = 0; off < need; off += kSeqChunk) {
      for (std::size_t i = 0; i < kSeqChunk / 8; ++i) words[i] = rng();
      std::uint64_t done = 0;
      while (done < kSeqChunk) {
        const ssize_t n = ::pwrite(file.fd, static_cast<char*>(buf.p) + done, kSeqChunk - done, off_t(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("cannot write the probe file " + file.path + ": " + std::strerror(n < 0 ? errno : ENOSPC));
        done += std::uint64_t(n);
      }
    }
    if (::fdatasync(file.fd) != 0) fail("cannot sync the probe file " + file.path + ": " + std::strerror(errno));
    f.seq_write_gbs = double(need) / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9;
  }

  const double s = c.seconds_per_test;
  if (c.progress) c.progress("storage: random 4 KiB reads, queue depth 1 and 32");
  f.random_4k_qd1 = random_reads(file.fd, need, kSmallRead < align ? align : kSmallRead, align, 1, s, c.seed + 1);
  f.random_4k_qd32 = random_reads(file.fd, need, kSmallRead < align ? align : kSmallRead, align, 32, s, c.seed + 2);
  if (c.progress) c.progress("storage: random row reads (" + std::to_string(c.row_bytes) + " B rows, " +
                             std::to_string(row_read) + " B read each), queue depth 1 and 32");
  f.row_qd1 = random_reads(file.fd, need, row_read, align, 1, s, c.seed + 3);
  f.row_qd32 = random_reads(file.fd, need, row_read, align, 32, s, c.seed + 4);

  if (c.progress) c.progress("storage: sequential 1 MiB reads");
  {
    AlignedBuffer buf(align, kSeqChunk);
    const auto t0 = Clock::now();
    for (std::uint64_t off = 0; off < need; off += kSeqChunk) {
      const ssize_t n = ::pread(file.fd, buf.p, kSeqChunk, off_t(off));
      if (n != ssize_t(kSeqChunk)) fail("a sequential read failed: " + std::string(std::strerror(n < 0 ? errno : EIO)));
    }
    f.seq_read_gbs = double(need) / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9;
  }
  return f;
}

nlohmann::json storage_to_json(const StorageFigures& f) {
  return {{"dir", f.dir},
          {"file_bytes", f.file_bytes},
          {"block_bytes", f.block_bytes},
          {"row_bytes", f.row_bytes},
          {"row_read_bytes", f.row_read_bytes},
          {"random_4k_qd1", reads_to_json(f.random_4k_qd1)},
          {"random_4k_qd32", reads_to_json(f.random_4k_qd32)},
          {"row_qd1", reads_to_json(f.row_qd1)},
          {"row_qd32", reads_to_json(f.row_qd32)},
          {"seq_read_gbs", f.seq_read_gbs},
          {"seq_write_gbs", f.seq_write_gbs},
          {"method", f.method}};
}

StorageFigures storage_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + ": storage is not an object");
  StorageFigures f;
  f.dir = j.value("dir", std::string());
  f.file_bytes = j.value("file_bytes", std::uint64_t{0});
  f.block_bytes = std::uint32_t(number(j, "block_bytes", where));
  f.row_bytes = std::uint32_t(number(j, "row_bytes", where));
  f.row_read_bytes = std::uint32_t(number(j, "row_read_bytes", where));
  f.random_4k_qd1 = reads_from_json(j, "random_4k_qd1", where);
  f.random_4k_qd32 = reads_from_json(j, "random_4k_qd32", where);
  f.row_qd1 = reads_from_json(j, "row_qd1", where);
  f.row_qd32 = reads_from_json(j, "row_qd32", where);
  f.seq_read_gbs = number(j, "seq_read_gbs", where);
  f.seq_write_gbs = number(j, "seq_write_gbs", where);
  f.method = j.value("method", std::string());
  return f;
}

std::string storage_to_text(const StorageFigures& f) {
  char buf[2048];
  auto line = [](const char* what, const StorageReads& r, bool latency) {
    char l[256];
    if (latency)
      std::snprintf(l, sizeof l, "  %-22s %10.0f reads/s   mean %7.1f us   p99 %7.1f us\n", what, r.reads_per_s,
                    r.mean_latency_us, r.p99_latency_us);
    else
      std::snprintf(l, sizeof l, "  %-22s %10.0f reads/s   mean %7.1f us per read in flight\n", what, r.reads_per_s,
                    r.mean_latency_us);
    return std::string(l);
  };
  std::snprintf(buf, sizeof buf, "storage under %s (a %s probe file, O_DIRECT, %u-byte blocks)\n", f.dir.c_str(),
                sized(double(f.file_bytes)).c_str(), f.block_bytes);
  std::string out = buf;
  out += line("random 4 KiB, QD 1", f.random_4k_qd1, true);
  out += line("random 4 KiB, QD 32", f.random_4k_qd32, false);
  const std::string row = "row " + std::to_string(f.row_bytes) + " B";
  out += line((row + ", QD 1").c_str(), f.row_qd1, true);
  out += line((row + ", QD 32").c_str(), f.row_qd32, false);
  std::snprintf(buf, sizeof buf,
                "  %-22s %10.2f GB/s\n  %-22s %10.2f GB/s\n  (a row read reads %u B: whole aligned blocks; %s)\n",
                "sequential read", f.seq_read_gbs, "sequential write", f.seq_write_gbs, f.row_read_bytes, f.method.c_str());
  out += buf;
  return out;
}

}  // namespace edo::kernels
