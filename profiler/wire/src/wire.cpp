#include "edo/wire/wire.h"

#include <array>
#include <cstring>
#include <type_traits>

namespace edo::wire {
namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = make_crc_table();

// ---- payload writer / reader ------------------------------------------------------------
struct Writer {
  std::string& s;
  void u(uint64_t v) {
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
  }
  void i(int64_t v) { u((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void str(std::string_view v) {
    u(v.size());
    s.append(v.data(), v.size());
  }
  void opt(const std::optional<int64_t>& v) {
    u(v ? 1 : 0);
    if (v) i(*v);
  }
};

struct Reader {
  std::string_view s;
  size_t p = 0;
  bool ok = true;
  uint64_t u() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= s.size()) return fail();
      uint8_t b = static_cast<uint8_t>(s[p++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  int64_t i() {
    uint64_t z = u();
    return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  uint32_t u32() {
    uint64_t v = u();
    if (v > 0xFFFFFFFFull) return static_cast<uint32_t>(fail());
    return static_cast<uint32_t>(v);
  }
  std::string str() {
    uint64_t n = u();
    if (!ok || n > s.size() - p) {
      fail();
      return {};
    }
    std::string r(s.substr(p, n));
    p += n;
    return r;
  }
  std::optional<int64_t> opt() {
    uint64_t has = u();
    if (has > 1) fail();
    if (has == 1) return i();
    return std::nullopt;
  }
  // A count of following items, each at least one byte: bounded by the remaining input so a
  // corrupt count cannot make us reserve huge vectors.
  uint64_t count() {
    uint64_t n = u();
    if (!ok || n > s.size() - p) return fail();
    return n;
  }
  uint64_t fail() {
    ok = false;
    p = s.size();
    return 0;
  }
  bool done() const { return ok && p == s.size(); }
};

template <class> inline constexpr bool kAlwaysFalse = false;

void write_payload(const Message& m, Writer& w) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Hello>) {
          w.u(v.protocol); w.i(v.pid); w.i(v.ppid); w.opt(v.rank); w.opt(v.local_rank);
          w.i(v.start_unix_ns); w.str(v.host); w.str(v.command); w.str(v.tool_version);
          w.u(v.settings.size());
          for (auto& [k, val] : v.settings) { w.str(k); w.str(val); }
          if (v.protocol >= kHelloRunId) w.str(v.run_id);
          if (v.protocol >= kHelloIdentity) {
            w.str(v.job_id); w.str(v.master); w.opt(v.world_size); w.opt(v.group_rank); w.opt(v.local_world_size);
          }
        } else if constexpr (std::is_same_v<T, TableReg>) {
          w.u(v.id); w.str(v.name); w.u(v.base); w.u(v.rows); w.u(v.dim); w.u(v.dtype);
          w.u(v.device); w.i(v.device_index);
        } else if constexpr (std::is_same_v<T, Tie>) {
          w.u(v.table); w.u(v.tied_with);
        } else if constexpr (std::is_same_v<T, TableDelta>) {
          w.u(v.table); w.str(v.aggregate);
        } else if constexpr (std::is_same_v<T, ExtraBytes>) {
          w.u(v.table); w.str(v.kind); w.u(v.bytes);
        } else if constexpr (std::is_same_v<T, Steps>) {
          w.u(v.steps);
        } else if constexpr (std::is_same_v<T, MemoryEvents>) {
          w.u(v.events.size());
          for (auto& e : v.events) {
            w.i(e.time_ns); w.i(e.bytes); w.u(e.address); w.u(e.stream); w.i(e.device); w.str(e.kind);
          }
        } else if constexpr (std::is_same_v<T, KernelStats>) {
          w.u(v.kernels.size());
          for (auto& k : v.kernels) {
            w.str(k.name); w.u(k.launches); w.u(k.total_ns); w.u(k.tables.size());
            for (auto& t : k.tables) w.str(t);
          }
          for (auto& k : v.kernels) {
            w.u(k.per_table.size());
            for (auto& t : k.per_table) { w.str(t.table); w.u(t.launches); w.u(t.total_ns); }
          }
        } else if constexpr (std::is_same_v<T, RangeStats>) {
          w.u(v.ranges.size());
          for (auto& r : v.ranges) {
            w.str(r.name); w.u(r.count); w.u(r.total_ns); w.u(r.lookups); w.u(r.alloc_bytes);
          }
        } else if constexpr (std::is_same_v<T, Dropped>) {
          w.u(v.counters.size());
          for (auto& [k, n] : v.counters) { w.str(k); w.u(n); }
        } else if constexpr (std::is_same_v<T, Note>) {
          w.str(v.key); w.str(v.value);
        } else if constexpr (std::is_same_v<T, Goodbye>) {
          w.i(v.duration_ns); w.u(static_cast<uint8_t>(v.reason)); w.i(v.code);
        } else if constexpr (std::is_same_v<T, WeightRows>) {
          w.u(v.table); w.u(v.snapshot); w.u(v.part); w.u(v.parts); w.u(v.dtype); w.u(v.dim);
          w.u(v.table_rows); w.u(v.population); w.u(v.hot_rows);
          w.u(v.rows.size());
          for (uint64_t r : v.rows) w.u(r);
          w.str(v.values);
        } else {
          static_assert(kAlwaysFalse<T>);
        }
      },
      m);
}

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t k = 0; k < n; ++k) crc = kCrcTable[(crc ^ p[k]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

MsgType type_of(const Message& m) { return static_cast<MsgType>(m.index() + 1); }

const char* type_name(MsgType t) {
  switch (t) {
    case MsgType::kHello: return "hello";
    case MsgType::kTable: return "table";
    case MsgType::kTie: return "tie";
    case MsgType::kTableDelta: return "table-delta";
    case MsgType::kExtraBytes: return "extra-bytes";
    case MsgType::kSteps: return "steps";
    case MsgType::kMemoryEvents: return "memory-events";
    case MsgType::kKernelStats: return "kernel-stats";
    case MsgType::kRangeStats: return "range-stats";
    case MsgType::kDropped: return "dropped";
    case MsgType::kNote: return "note";
    case MsgType::kGoodbye: return "goodbye";
    case MsgType::kWeightRows: return "weight-rows";
  }
  return "unknown";
}

static void put32(char* p, uint32_t v) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<char>((v >> (8 * k)) & 0xFF);
}
static uint32_t get32(const char* p) {
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[k])) << (8 * k);
  return v;
}

// Low 16 bits of the CRC-32 of version, type and length: lets the decoder reject a damaged
// length field at once instead of waiting for bytes that will never come.
static uint16_t header_check(const char* h) {
  char b[6] = {h[4], h[5], h[8], h[9], h[10], h[11]};
  return static_cast<uint16_t>(crc32(b, 6) & 0xFFFF);
}

void encode(const Message& m, std::string& out) {
  const size_t start = out.size();
  out.resize(start + kHeaderSize);
  Writer w{out};
  write_payload(m, w);
  const size_t len = out.size() - start - kHeaderSize;
  char* h = out.data() + start;
  std::memcpy(h, kMagic, 4);
  h[4] = static_cast<char>(kVersion);
  h[5] = static_cast<char>(type_of(m));
  put32(h + 8, static_cast<uint32_t>(len));
  const uint16_t hc = header_check(h);
  h[6] = static_cast<char>(hc & 0xFF);
  h[7] = static_cast<char>(hc >> 8);
  uint32_t c = crc32(h + 4, 8);
  c = crc32(h + kHeaderSize, len, c);
  put32(h + 12, c);
}

std::string encode(const Message& m) {
  std::string s;
  encode(m, s);
  return s;
}

namespace {

// One reader per message type, in the order encode() writes its fields.
void read(Reader& r, Hello& v) {
  v.protocol = r.u32(); v.pid = r.i(); v.ppid = r.i(); v.rank = r.opt(); v.local_rank = r.opt();
  v.start_unix_ns = r.i(); v.host = r.str(); v.command = r.str(); v.tool_version = r.str();
  uint64_t n = r.count();
  for (uint64_t k = 0; k < n && r.ok; ++k) {
    std::string key = r.str();
    v.settings.emplace_back(std::move(key), r.str());
  }
  if (v.protocol >= kHelloRunId) v.run_id = r.str();
  if (v.protocol >= kHelloIdentity) {
    v.job_id = r.str(); v.master = r.str(); v.world_size = r.opt(); v.group_rank = r.opt();
    v.local_world_size = r.opt();
  }
}

void read(Reader& r, TableReg& v) {
  v.id = r.u32(); v.name = r.str(); v.base = r.u(); v.rows = r.u(); v.dim = r.u32();
  uint64_t dt = r.u(), dev = r.u();
  if (dt > 255 || dev > 255) r.fail();
  v.dtype = static_cast<uint8_t>(dt); v.device = static_cast<uint8_t>(dev);
  v.device_index = static_cast<int32_t>(r.i());
}

void read(Reader& r, Tie& v) {
  v.table = r.u32(); v.tied_with = r.u32();
}

void read(Reader& r, TableDelta& v) {
  v.table = r.u32(); v.aggregate = r.str();
}

void read(Reader& r, ExtraBytes& v) {
  v.table = r.u32(); v.kind = r.str(); v.bytes = r.u();
}

void read(Reader& r, Steps& v) {
  v.steps = r.u();
}

void read(Reader& r, MemoryEvents& v) {
  uint64_t n = r.count();
  v.events.reserve(n);
  for (uint64_t k = 0; k < n && r.ok; ++k) {
    MemEvent e;
    e.time_ns = r.i(); e.bytes = r.i(); e.address = r.u(); e.stream = r.u();
    e.device = static_cast<int32_t>(r.i()); e.kind = r.str();
    v.events.push_back(std::move(e));
  }
}

void read(Reader& r, KernelStats& v) {
  uint64_t n = r.count();
  for (uint64_t k = 0; k < n && r.ok; ++k) {
    Kernel kn;
    kn.name = r.str(); kn.launches = r.u(); kn.total_ns = r.u();
    uint64_t t = r.count();
    for (uint64_t j = 0; j < t && r.ok; ++j) kn.tables.push_back(r.str());
    v.kernels.push_back(std::move(kn));
  }
  if (r.ok && !r.done()) {  // per-table section (absent in older streams)
    for (auto& kn : v.kernels) {
      uint64_t t = r.count();
      for (uint64_t j = 0; j < t && r.ok; ++j) {
        KernelTable kt;
        kt.table = r.str(); kt.launches = r.u(); kt.total_ns = r.u();
        kn.per_table.push_back(std::move(kt));
      }
    }
  }
}

void read(Reader& r, RangeStats& v) {
  uint64_t n = r.count();
  for (uint64_t k = 0; k < n && r.ok; ++k) {
    Range g;
    g.name = r.str(); g.count = r.u(); g.total_ns = r.u(); g.lookups = r.u(); g.alloc_bytes = r.u();
    v.ranges.push_back(std::move(g));
  }
}

void read(Reader& r, Dropped& v) {
  uint64_t n = r.count();
  for (uint64_t k = 0; k < n && r.ok; ++k) {
    std::string key = r.str();
    v.counters.emplace_back(std::move(key), r.u());
  }
}

void read(Reader& r, Note& v) {
  v.key = r.str(); v.value = r.str();
}

void read(Reader& r, Goodbye& v) {
  v.duration_ns = r.i();
  uint64_t reason = r.u();
  if (reason > 2) r.fail();
  v.reason = static_cast<EndReason>(reason);
  v.code = static_cast<int32_t>(r.i());
}

void read(Reader& r, WeightRows& v) {
  v.table = r.u32(); v.snapshot = r.u32(); v.part = r.u32(); v.parts = r.u32();
  const uint64_t dt = r.u();
  if (dt > 255) r.fail();
  v.dtype = static_cast<uint8_t>(dt);
  v.dim = r.u32(); v.table_rows = r.u(); v.population = r.u(); v.hot_rows = r.u();
  const uint64_t n = r.count();
  v.rows.reserve(n);
  for (uint64_t k = 0; k < n && r.ok; ++k) v.rows.push_back(r.u());
  v.values = r.str();
  if (v.part >= v.parts || v.hot_rows > v.rows.size()) r.fail();
}

template <class T>
bool read_into(Reader& r, Message& out) {
  T v;
  read(r, v);
  out = std::move(v);
  return r.done();
}

}  // namespace

bool decode_payload(MsgType type, std::string_view payload, Message& out) {
  Reader r{payload};
  switch (type) {
    case MsgType::kHello:
      return read_into<Hello>(r, out);
    case MsgType::kTable:
      return read_into<TableReg>(r, out);
    case MsgType::kTie:
      return read_into<Tie>(r, out);
    case MsgType::kTableDelta:
      return read_into<TableDelta>(r, out);
    case MsgType::kExtraBytes:
      return read_into<ExtraBytes>(r, out);
    case MsgType::kSteps:
      return read_into<Steps>(r, out);
    case MsgType::kMemoryEvents:
      return read_into<MemoryEvents>(r, out);
    case MsgType::kKernelStats:
      return read_into<KernelStats>(r, out);
    case MsgType::kRangeStats:
      return read_into<RangeStats>(r, out);
    case MsgType::kDropped:
      return read_into<Dropped>(r, out);
    case MsgType::kNote:
      return read_into<Note>(r, out);
    case MsgType::kGoodbye:
      return read_into<Goodbye>(r, out);
    case MsgType::kWeightRows:
      return read_into<WeightRows>(r, out);
    default:
      return false;
  }
}

// ---- stream decoder ----------------------------------------------------------------------
void StreamDecoder::feed(const void* data, size_t n) {
  compact();
  buf_.append(static_cast<const char*>(data), n);
}

void StreamDecoder::compact() {
  if (pos_ > 0 && (pos_ >= (1u << 20) || pos_ * 2 >= buf_.size())) {
    buf_.erase(0, pos_);
    base_offset_ += pos_;
    pos_ = 0;
    resync_known_ = false;  // positions in buf_ moved
  }
}

size_t StreamDecoder::next_whole_frame(size_t from) {
  if (resync_known_ && from >= resync_from_ && (resync_at_ == std::string::npos || from <= resync_at_)) return resync_at_;
  resync_known_ = true;
  resync_from_ = from;
  resync_at_ = std::string::npos;
  for (size_t p = from; p + kHeaderSize <= buf_.size(); ++p) {
    const char* h = buf_.data() + p;
    if (std::memcmp(h, kMagic, 4) != 0 || static_cast<uint8_t>(h[4]) != kVersion) continue;
    if ((static_cast<uint8_t>(h[6]) | static_cast<uint8_t>(h[7]) << 8) != header_check(h)) continue;
    const uint32_t len = get32(h + 8);
    if (len > kMaxPayload || buf_.size() - p - kHeaderSize < len) continue;
    uint32_t c = crc32(h + 4, 8);
    c = crc32(h + kHeaderSize, len, c);
    if (c != get32(h + 12)) continue;
    resync_at_ = p;
    break;
  }
  return resync_at_;
}

StreamDecoder::Result StreamDecoder::next(Message& out) {
  Result res;
  const uint64_t damage_start = base_offset_ + pos_;
  std::string reason;
  size_t skipped = 0;
  while (true) {
    const size_t avail = buf_.size() - pos_;
    if (avail < kHeaderSize) {
      // Could still be the start of a frame (or garbage): wait for more bytes.
      if (skipped > 0) break;
      res.status = Status::kNeedMore;
      return res;
    }
    const char* h = buf_.data() + pos_;
    std::string why;
    if (std::memcmp(h, kMagic, 4) != 0) {
      why = "bad magic";
    } else if ((static_cast<uint8_t>(h[6]) | static_cast<uint8_t>(h[7]) << 8) != header_check(h)) {
      why = "damaged frame header";
    } else if (static_cast<uint8_t>(h[4]) != kVersion) {
      why = "unsupported frame version " + std::to_string(static_cast<uint8_t>(h[4]));
    } else {
      const uint32_t len = get32(h + 8);
      if (len > kMaxPayload) {
        why = "frame length " + std::to_string(len) + " too large";
      } else if (avail < kHeaderSize + len) {
        if (eof_ && next_whole_frame(pos_ + 1) != std::string::npos) {
          why = "frame length " + std::to_string(len) + " runs past the end of the stream";
        } else {
          if (skipped > 0) break;  // report the damage first
          res.status = Status::kNeedMore;
          return res;
        }
      } else {
        uint32_t c = crc32(h + 4, 8);
        c = crc32(h + kHeaderSize, len, c);
        if (c != get32(h + 12)) {
          why = "checksum mismatch";
        } else {
          if (skipped > 0) break;  // report the skipped region before this good frame
          const auto type = static_cast<MsgType>(static_cast<uint8_t>(h[5]));
          std::string_view payload(h + kHeaderSize, len);
          const uint64_t off = base_offset_ + pos_;
          if (!decode_payload(type, payload, out)) {
            why = std::string("malformed ") + type_name(type) + " payload";
          } else {
            pos_ += kHeaderSize + len;
            ++frames_;
            res.status = Status::kMessage;
            res.offset = off;
            return res;
          }
        }
      }
    }
    // Damaged here: skip one byte and look for the next magic.
    if (skipped == 0) reason = why;
    ++pos_;
    ++skipped;
    while (pos_ < buf_.size() && buf_[pos_] != kMagic[0]) {
      ++pos_;
      ++skipped;
    }
  }
  res.status = Status::kCorrupt;
  res.offset = damage_start;
  res.error = reason + " (" + std::to_string(skipped) + " bytes skipped)";
  return res;
}

}  // namespace edo::wire
