#include "edo/capture/config.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace edo::capture {

const std::vector<VarDoc>& documented_variables() {
  static const std::vector<VarDoc> docs = {
      {"EDO_OUTPUT", "(unset)", "write frames to this file instead of `edo record`'s channel; children write <path>.<pid>; turn it into a database with `edo import`"},
      {"EDO_CHANNEL", "(set by edo record)", "Unix socket path of the collector"},
      {"EDO_UNSENT", "(set by edo record)", "prefix of the files that keep what a process could not send to a collector that went away (<prefix>.<pid>, EDO_OUTPUT format: edo import <prefix>.*); edo record sets <output>.unsent"},
      {"EDO_FLUSH_MS", "1000", "flush aggregated deltas at least this often (milliseconds, 10..3600000)"},
      {"EDO_EXACT_ROWS", "67108864", "tables with at most this many rows get exact per-row counts; larger ones a count-min sketch + top-K"},
      {"EDO_TOPK", "65536", "top-K size of sketched tables"},
      {"EDO_MAX_BUFFER_MB", "256", "bound on index batches waiting for the background thread (host copies and pinned device staging); beyond it batches are dropped and counted"},
      {"EDO_MAX_EVENTS", "1048576", "memory events buffered between two flushes; beyond it events are dropped and counted"},
      {"EDO_WINDOW_STEPS", "0", "close a hot-set drift window every N edo_step() calls (0: at every flush)"},
      {"EDO_MAX_MEMORY_MB", "4096", "bound on the tables' statistics in each traced process (MiB, 16..1048576): a table beyond its share gets smaller statistics (small tables stay exact), and none only when not even every registered table's smallest fit (counted); see docs/memory.md"},
      {"EDO_MAX_DEVICE_MB", "1024", "bound on edo's own device memory in each traced process (MiB, 16..1048576): the device counters of tables counted on the GPU and a sample arena per context, allocated outside the job's allocator; a table whose counters do not fit is counted on the host instead (device_memory_bound_tables); see docs/memory.md"},
      {"EDO_ASYNC", "1", "1: lookups are copied and counted on a background thread; 0: counted inline in the caller"},
      {"EDO_LRU", "1", "0: count rows only, no LRU hit-rate curve (cheaper ingest)"},
      {"EDO_CUDA_CAPTURE", "1", "0 turns off CUPTI capture (GPU allocations, kernels); device indices are still counted"},
      {"EDO_CUPTI_PATH", "(toolkit libcupti)", "libcupti.so to load (then the build-time toolkit path, then libcupti.so.13)"},
      {"EDO_VERBOSE", "0", "1: the library explains what it captures and why something is off"},
      {"EDO_WEIGHTS", "0", "1 (edo record --weights): keep a weight snapshot per table (hottest rows + a uniform sample) for the tuner's error; the PyTorch hook hands the weights over at exit, C/C++ jobs call edo_table_weights()"},
      {"EDO_WEIGHT_ROWS", "65536", "rows per table a weight snapshot keeps at most (16..16777216)"},
      {"EDO_TORCH", "1", "0: do not auto-instrument torch.nn.Embedding/EmbeddingBag (edo record)"},
      {"EDO_TORCH_SCAN", "1", "0: register only the models passed to edo.instrument(), not every embedding torch creates"},
      {"EDO_ROOT_PID", "(set by edo record)", "pid of the job's first process"},
      {"EDO_TRACE_LIB", "(set by edo record)", "full path of libedo_trace.so, for the Python hook"},
      {"EDO_OUTPUT_OWNER", "(set by the library)", "pid of the process that writes EDO_OUTPUT itself (the others write <path>.<pid>)"},
      {"EDO_RUN_ID", "(set by the library)", "id of the traced run: the first traced process makes one, its children inherit it, every trace file's Hello carries it (edo import keeps the files of one run)"},
  };
  return docs;
}

std::string new_run_id() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v)) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    v = (static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec)) ^
        (static_cast<uint64_t>(getpid()) << 40) ^ reinterpret_cast<uintptr_t>(&v);
    v ^= v >> 33; v *= 0xff51afd7ed558ccdULL; v ^= v >> 33;  // spread the bits (fmix64)
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id(16, '0');
  for (int i = 0; i < 16; ++i) id[size_t(i)] = kHex[(v >> (60 - 4 * i)) & 15];
  return id;
}

bool valid_run_id(const char* id) {
  const size_t n = id ? std::strlen(id) : 0;
  if (n == 0 || n > 32) return false;
  for (size_t i = 0; i < n; ++i)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z'))) return false;
  return true;
}

namespace {

using Getter = std::function<const char*(const char*)>;

// Digits only (no sign, blank, exponent or unit). kTooLarge: digits beyond 2^64 - 1.
enum class Number { kOk, kNotANumber, kTooLarge };
Number parse_u64(const char* s, uint64_t& out) {
  if (!s || !*s) return Number::kNotANumber;
  for (const char* p = s; *p; ++p)
    if (*p < '0' || *p > '9') return Number::kNotANumber;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno == ERANGE) return Number::kTooLarge;
  if (errno != 0 || *end != '\0') return Number::kNotANumber;
  out = v;
  return Number::kOk;
}

// Shown in a warning: at most 64 characters, control characters as '?'.
std::string shown(const char* value) {
  std::string s;
  for (const char* p = value; *p && s.size() < 64; ++p) s += (static_cast<unsigned char>(*p) < 0x20 || *p == 0x7f) ? '?' : *p;
  if (std::strlen(value) > 64) s += "...";
  return s;
}

void warn(std::vector<std::string>* w, const char* var, const char* value, const std::string& def,
          const std::string& why) {
  if (w) w->push_back(std::string("edo: ignoring ") + var + "='" + shown(value) + "' (" + why + "); using the default " + def);
}

// The value, or nullptr when unset or empty.
const char* value_of(const Getter& get, const char* var) {
  const char* v = get(var);
  return v && *v ? v : nullptr;
}

void get_u64(const Getter& get, const char* var, uint64_t& field, uint64_t lo, uint64_t hi, std::vector<std::string>* w) {
  const char* v = value_of(get, var);
  if (!v) return;
  uint64_t x = 0;
  const std::string range = "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
  switch (parse_u64(v, x)) {
    case Number::kNotANumber:
      warn(w, var, v, std::to_string(field), std::string(*v == '-' ? "negative" : "not a whole number") + ": " + range);
      return;
    case Number::kTooLarge:
      warn(w, var, v, std::to_string(field), "too large: " + range);
      return;
    case Number::kOk:
      break;
  }
  if (x < lo || x > hi) {
    warn(w, var, v, std::to_string(field), range);
    return;
  }
  field = x;
}

// One set of spellings for every switch (kSwitchSpellings, documented in `edo record --help` and
// the README's environment variables): 1/true/yes/on and 0/false/no/off, any case. Anything else
// is named in one warning that lists them (issue 30 §11: the warning said "expected 0 or 1"
// while "yes" was taken).
void get_bool(const Getter& get, const char* var, bool& field, std::vector<std::string>* w) {
  const char* v = value_of(get, var);
  if (!v) return;
  if (!std::strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
    field = true;
  } else if (!std::strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) {
    field = false;
  } else {
    warn(w, var, v, field ? "1" : "0", std::string("expected ") + kSwitchSpellings);
  }
}

void get_pid(const Getter& get, const char* var, int64_t& field, std::vector<std::string>* w) {
  const char* v = value_of(get, var);
  if (!v) return;
  uint64_t x = 0;
  if (parse_u64(v, x) != Number::kOk || x == 0 || x > uint64_t{1} << 22) {
    warn(w, var, v, "(unset)", "not a process id");
    return;
  }
  field = static_cast<int64_t>(x);
}

// Socket paths are at most 107 bytes (sockaddr_un); a longer one would be cut and name
// another file.
void get_socket_path(const Getter& get, const char* var, std::string& field, std::vector<std::string>* w) {
  const char* v = value_of(get, var);
  if (!v) return;
  if (std::strlen(v) > 107) {
    warn(w, var, v, "(unset: no collector)", "longer than the 107 bytes a socket path can have");
    return;
  }
  field = v;
}

}  // namespace

Config parse_config(const std::function<const char*(const char*)>& get,
                    std::vector<std::string>* warnings) {
  Config c;
  get_socket_path(get, "EDO_CHANNEL", c.channel, warnings);
  if (const char* v = value_of(get, "EDO_OUTPUT")) c.output = v;
  if (const char* v = value_of(get, "EDO_UNSENT")) c.unsent = v;
  if (const char* v = value_of(get, "EDO_CUPTI_PATH")) c.cupti_path = v;
  get_bool(get, "EDO_VERBOSE", c.verbose, warnings);
  get_u64(get, "EDO_FLUSH_MS", c.flush_ms, 10, 3600000, warnings);
  get_u64(get, "EDO_EXACT_ROWS", c.exact_rows, 0, uint64_t{1} << 40, warnings);
  get_u64(get, "EDO_TOPK", c.top_k, 16, uint64_t{1} << 24, warnings);
  get_u64(get, "EDO_MAX_BUFFER_MB", c.max_buffer_mb, 1, uint64_t{1} << 20, warnings);
  get_u64(get, "EDO_MAX_EVENTS", c.max_events, 16, uint64_t{1} << 30, warnings);
  get_u64(get, "EDO_WINDOW_STEPS", c.window_steps, 0, uint64_t{1} << 40, warnings);
  get_u64(get, "EDO_MAX_MEMORY_MB", c.max_memory_mb, 16, uint64_t{1} << 20, warnings);
  get_u64(get, "EDO_MAX_DEVICE_MB", c.max_device_mb, 16, uint64_t{1} << 20, warnings);
  get_bool(get, "EDO_ASYNC", c.async, warnings);
  get_bool(get, "EDO_LRU", c.lru, warnings);
  get_bool(get, "EDO_CUDA_CAPTURE", c.cuda, warnings);
  get_bool(get, "EDO_WEIGHTS", c.weights, warnings);
  get_u64(get, "EDO_WEIGHT_ROWS", c.weight_rows, 16, uint64_t{1} << 24, warnings);
  get_bool(get, "EDO_TORCH", c.torch, warnings);
  get_bool(get, "EDO_TORCH_SCAN", c.torch_scan, warnings);
  get_pid(get, "EDO_ROOT_PID", c.root_pid, warnings);
  get_pid(get, "EDO_OUTPUT_OWNER", c.output_owner, warnings);
  if (const char* id = get("EDO_RUN_ID"); id && *id) {
    if (valid_run_id(id))
      c.run_id = id;
    else if (warnings)
      warnings->push_back("edo: ignoring EDO_RUN_ID='" + shown(id) + "' (1-32 characters 0-9 a-z); using the default (a new run id)");
  }
  return c;
}

}  // namespace edo::capture
