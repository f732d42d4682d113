// edo trace wire format: what leaves a traced process (over the `edo record` socket or into
// an EDO_OUTPUT file) and what the collector decodes.
//
// A stream is a sequence of frames. Each frame is
//
//   offset size  field
//   0      4     magic "EDOF"
//   4      1     format version (kVersion)
//   5      1     message type (MsgType)
//   6      2     header check: low 16 bits of CRC-32 of bytes 4, 5, 8..11
//   8      4     payload length (little endian, <= kMaxPayload)
//   12     4     CRC-32 (IEEE) of bytes 4..11 followed by the payload
//   16     n     payload (varint-encoded message fields, see wire.cpp)
//
// so a stream cut at any byte decodes up to its last whole frame, and garbage is detected
// (checksums) and skipped by scanning for the next magic; a damaged length field is caught by
// the header check without waiting for the bytes it claims. A stream may hold several sessions:
// each Hello starts one (an exec'ed process appends to its predecessor's file).
// Table statistics travel as deltas (edo::stats::TableAggregate::serialize()); everything
// else that is a running total (steps, kernels, ranges, drop counters) travels as the
// absolute value so that a lost frame never corrupts later ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace edo::wire {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 16;
inline constexpr uint32_t kMaxPayload = 1u << 30;
inline constexpr char kMagic[4] = {'E', 'D', 'O', 'F'};

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

enum class MsgType : uint8_t {
  kHello = 1,
  kTable = 2,
  kTie = 3,
  kTableDelta = 4,
  kExtraBytes = 5,
  kSteps = 6,
  kMemoryEvents = 7,
  kKernelStats = 8,
  kRangeStats = 9,
  kDropped = 10,
  kNote = 11,
  kGoodbye = 12,
  kWeightRows = 13,
};

// Hello payload versions (the frame version kVersion is unchanged, so every older stream still
// decodes): 1 = the fields below up to settings; 2 = run_id appended; 3 = the job identity
// (job_id .. local_world_size) appended.
inline constexpr uint32_t kHelloRunId = 2;
inline constexpr uint32_t kHelloIdentity = 3;

struct Hello {
  uint32_t protocol = kHelloIdentity;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::optional<int64_t> rank;
  std::optional<int64_t> local_rank;
  int64_t start_unix_ns = 0;
  std::string host;
  std::string command;       // argv joined by spaces
  std::string tool_version;
  std::vector<std::pair<std::string, std::string>> settings;  // EDO_* in force
  // The run this process belongs to (EDO_RUN_ID: made by the run's first traced process,
  // inherited by its children). Empty: a stream written before run ids (protocol 1).
  std::string run_id;
  // Where the process sits in a distributed job, from the launcher's environment
  // (edo/model/rank_identity.h). Empty / unset in older streams (protocol < 3).
  std::string job_id;                       // TORCHELASTIC_RUN_ID
  std::string master;                       // MASTER_ADDR:MASTER_PORT
  std::optional<int64_t> world_size;        // WORLD_SIZE
  std::optional<int64_t> group_rank;        // GROUP_RANK
  std::optional<int64_t> local_world_size;  // LOCAL_WORLD_SIZE
};

// dtype/device use the numeric values of edo_dtype / edo_device (edo.h).
struct TableReg {
  uint32_t id = 0;           // per-session table id, referenced by the frames below
  std::string name;
  uint64_t base = 0;
  uint64_t rows = 0;
  uint32_t dim = 0;
  uint8_t dtype = 0;
  uint8_t device = 0;
  int32_t device_index = -1;
};

struct Tie {
  uint32_t table = 0;        // registered first
  uint32_t tied_with = 0;    // a later name on the same base pointer
};

struct TableDelta {
  uint32_t table = 0;
  std::string aggregate;     // TableAggregate::serialize()
};

struct ExtraBytes {
  uint32_t table = 0;
  std::string kind;
  uint64_t bytes = 0;        // replaces the previous value of this kind
};

struct Steps {
  uint64_t steps = 0;        // absolute
};

struct MemEvent {
  int64_t time_ns = 0;       // since session start
  int64_t bytes = 0;         // > 0 allocation, < 0 free
  uint64_t address = 0;
  uint64_t stream = 0;
  int32_t device = 0;
  std::string kind;
};

struct MemoryEvents {        // appended
  std::vector<MemEvent> events;
};

// Launches of a kernel whose pointer arguments point into one table, and their GPU time (a
// launch that reads two tables counts for both).
struct KernelTable {
  std::string table;
  uint64_t launches = 0;
  uint64_t total_ns = 0;
};

struct Kernel {
  std::string name;
  uint64_t launches = 0;
  uint64_t total_ns = 0;
  std::vector<std::string> tables;
  // Per table (added after the first release: encoded after all kernels, absent in older
  // streams, which decode with it empty).
  std::vector<KernelTable> per_table;
};

struct KernelStats {         // absolute (replaces the session's kernels)
  std::vector<Kernel> kernels;
};

struct Range {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t lookups = 0;
  uint64_t alloc_bytes = 0;
};

struct RangeStats {          // absolute (replaces the session's ranges)
  std::vector<Range> ranges;
};

struct Dropped {             // absolute counters, e.g. "batches", "indices", "memory_events"
  std::vector<std::pair<std::string, uint64_t>> counters;
};

struct Note {                // free-form fact, e.g. ("cupti", "unavailable: ...")
  std::string key;
  std::string value;
};
// The note a tracer sends at the end of a flush that `edo record` asked for (one byte 'F' on
// the connection, before it passes a signal on to the job); not a fact about the recording.
inline constexpr const char* kFlushReplyNote = "edo.flush_reply";

enum class EndReason : uint8_t { kExit = 0, kSignal = 1, kExec = 2 };

struct Goodbye {
  int64_t duration_ns = 0;
  EndReason reason = EndReason::kExit;
  int32_t code = 0;          // signal number for kSignal
};

// Part of a weight snapshot (edo_table_weights / EDO_WEIGHTS=1): rows of one table with their
// values in the table's dtype. A snapshot is sent as parts 0..parts-1, hot rows first; a part 0
// starts a new snapshot of that table (replacing an older one).
struct WeightRows {
  uint32_t table = 0;
  uint32_t snapshot = 0;     // per-table sequence number
  uint32_t part = 0;
  uint32_t parts = 1;
  uint8_t dtype = 0;         // edo_dtype of the values
  uint32_t dim = 0;
  uint64_t table_rows = 0;
  uint64_t population = 0;   // rows the snapshot's uniform sample was drawn from
  uint64_t hot_rows = 0;     // the first hot_rows entries of `rows` are hot rows
  std::vector<uint64_t> rows;
  std::string values;        // rows.size() x dim elements of dtype, row-major
};

using Message = std::variant<Hello, TableReg, Tie, TableDelta, ExtraBytes, Steps, MemoryEvents,
                             KernelStats, RangeStats, Dropped, Note, Goodbye, WeightRows>;

MsgType type_of(const Message& m);
const char* type_name(MsgType t);

// Appends one whole frame (header + payload) for `m` to `out`.
void encode(const Message& m, std::string& out);
std::string encode(const Message& m);

// Decodes one frame's payload. Returns false on malformed payload (never throws, never reads
// out of bounds).
bool decode_payload(MsgType type, std::string_view payload, Message& out);

// Incremental decoder for a byte stream (socket or file). Feed bytes as they arrive and pull
// messages; corrupt data is reported once per damaged region and skipped (resync on the next
// valid frame).
class StreamDecoder {
 public:
  enum class Status { kMessage, kNeedMore, kCorrupt };
  struct Result {
    Status status = Status::kNeedMore;
    uint64_t offset = 0;     // stream offset of the frame (kMessage) or of the damage (kCorrupt)
    std::string error;       // kCorrupt: what was wrong
  };

  void feed(const void* data, size_t n);
  // No more bytes will come. A frame header whose length runs past the end is then damage when
  // a whole valid frame follows it (decoding resumes there; a damaged length that passed the
  // 16-bit header check must not hide the rest of a file), and otherwise a truncated tail,
  // left in pending_bytes().
  void end_of_stream() { eof_ = true; }
  // kMessage: `out` holds the next message. kCorrupt: some bytes were skipped; call again.
  Result next(Message& out);
  // Bytes buffered but not yet forming a whole frame (a truncated tail at end of stream).
  size_t pending_bytes() const { return buf_.size() - pos_; }
  uint64_t consumed_offset() const { return base_offset_ + pos_; }
  uint64_t frames() const { return frames_; }

 private:
  void compact();
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_offset_ = 0;  // stream offset of buf_[0]
  uint64_t frames_ = 0;
  bool in_garbage_ = false;
  bool eof_ = false;
  // After end_of_stream(): where the next whole valid frame at or after resync_from_ starts in
  // buf_ (npos: none), so that a run of long-claiming headers is scanned once, not once each.
  size_t resync_from_ = 0, resync_at_ = 0;
  bool resync_known_ = false;
  size_t next_whole_frame(size_t from);
};

}  // namespace edo::wire
