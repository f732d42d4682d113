#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include "counting_allocator.h"
#include "sample_trace.h"

using namespace edo::wire;
using namespace edo::wire::sample;

TEST(Wire, Crc32MatchesTheIeeeCheckValue) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
}

TEST(Wire, FrameHeaderLayout) {
  std::string f = encode(Steps{300});
  ASSERT_GE(f.size(), kHeaderSize);
  EXPECT_EQ(f.substr(0, 4), "EDOF");
  EXPECT_EQ(uint8_t(f[4]), kVersion);
  EXPECT_EQ(uint8_t(f[5]), uint8_t(MsgType::kSteps));
  const uint32_t len = uint8_t(f[8]) | uint8_t(f[9]) << 8 | uint8_t(f[10]) << 16 | uint32_t(uint8_t(f[11])) << 24;
  EXPECT_EQ(len, f.size() - kHeaderSize);
}

TEST(Wire, EveryMessageRoundTrips) {
  const auto msgs = sample_messages();
  const auto back = decode_all(sample_stream());
  ASSERT_EQ(back.size(), msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    EXPECT_EQ(back[i].index(), msgs[i].index()) << i;
    // Re-encoding the decoded message gives identical bytes.
    EXPECT_EQ(encode(back[i]), encode(msgs[i])) << "message " << i << " (" << type_name(type_of(msgs[i])) << ")";
  }
  const auto& h = std::get<Hello>(back[0]);
  EXPECT_EQ(h.pid, 4242);
  EXPECT_EQ(*h.rank, 3);
  EXPECT_EQ(h.command, "python3 train.py --lr 0.1");
  const auto& d = std::get<TableDelta>(back[4]);
  edo::stats::TableAggregate agg;
  ASSERT_TRUE(edo::stats::TableAggregate::deserialize(d.aggregate, agg));
  EXPECT_EQ(agg.lookups(), 5000u);
  EXPECT_EQ(agg.unique_rows(), 1000u);
  const auto& me = std::get<MemoryEvents>(back[7]);
  EXPECT_EQ(me.events[2].bytes, -4096);
  EXPECT_EQ(std::get<Goodbye>(back[12]).reason, EndReason::kSignal);
}

TEST(Wire, KernelStatsCarryPerTableFiguresAndOlderFramesStillDecode) {
  KernelStats ks{{{"gather", 4, 800, {"a", "b"}, {{"a", 4, 800}, {"b", 1, 200}}}, {"gemm", 2, 50, {}, {}}}};
  const std::string frame = encode(ks);
  Message m;
  ASSERT_TRUE(decode_payload(MsgType::kKernelStats, std::string_view(frame).substr(kHeaderSize), m));
  const auto& back = std::get<KernelStats>(m);
  ASSERT_EQ(back.kernels.size(), 2u);
  ASSERT_EQ(back.kernels[0].per_table.size(), 2u);
  EXPECT_EQ(back.kernels[0].per_table[1].table, "b");
  EXPECT_EQ(back.kernels[0].per_table[1].launches, 1u);
  EXPECT_EQ(back.kernels[0].per_table[1].total_ns, 200u);
  // The first release wrote no per-table section: the same payload without it (one zero count
  // per kernel at the end) decodes, with the per-table figures empty.
  KernelStats old{{{"gather", 4, 800, {"a"}, {}}, {"gemm", 2, 50, {}, {}}}};
  std::string payload = encode(old).substr(kHeaderSize);
  ASSERT_EQ(payload.substr(payload.size() - 2), std::string(2, '\0'));
  payload.resize(payload.size() - 2);
  ASSERT_TRUE(decode_payload(MsgType::kKernelStats, payload, m));
  const auto& o = std::get<KernelStats>(m);
  ASSERT_EQ(o.kernels.size(), 2u);
  EXPECT_EQ(o.kernels[0].tables, std::vector<std::string>{"a"});
  EXPECT_TRUE(o.kernels[0].per_table.empty());
  // A per-table section that is cut short is malformed, not silently half-read.
  std::string cut = encode(ks).substr(kHeaderSize);
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(decode_payload(MsgType::kKernelStats, cut, m));
}

TEST(Wire, ByteByByteFeedingDecodesTheSame) {
  const std::string s = sample_stream();
  int bad = 0;
  EXPECT_EQ(decode_all(s, &bad, 1).size(), sample_messages().size());
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(decode_all(s, &bad, 7).size(), sample_messages().size());
}

// A stream cut at ANY byte decodes exactly the frames that end before the cut, never
// reports corruption and never more.
TEST(Wire, CutAtEveryOffsetDecodesUpToTheLastWholeFrame) {
  std::vector<size_t> ends;
  const std::string s = sample_stream(&ends);
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    int bad = 0;
    StreamDecoder d;
    d.feed(s.data(), cut);
    size_t n = 0;
    Message m;
    while (true) {
      auto r = d.next(m);
      if (r.status == StreamDecoder::Status::kNeedMore) break;
      if (r.status == StreamDecoder::Status::kCorrupt) { ++bad; continue; }
      ++n;
    }
    const size_t whole = size_t(std::upper_bound(ends.begin(), ends.end(), cut) - ends.begin());
    ASSERT_EQ(n, whole) << "cut at " << cut;
    ASSERT_EQ(bad, 0) << "cut at " << cut;
    ASSERT_EQ(d.pending_bytes(), cut - (whole ? ends[whole - 1] : 0)) << "cut at " << cut;
  }
}

TEST(Wire, AFlippedByteLosesOnlyItsFrame) {
  std::vector<size_t> ends;
  const std::string s = sample_stream(&ends);
  const size_t total = ends.size();
  for (size_t pos = 0; pos < s.size(); pos += 3) {
    std::string t = s;
    t[pos] = char(t[pos] ^ 0x5A);
    int bad = 0;
    auto got = decode_all(t, &bad);
    // The damaged frame is skipped; every other frame survives (resync on the next magic).
    ASSERT_GE(got.size(), total - 1) << "flip at " << pos;
    ASSERT_LE(got.size(), total) << "flip at " << pos;
    if (got.size() == total - 1) {
      ASSERT_GE(bad, 1) << "flip at " << pos;
    }
  }
}

TEST(Wire, GarbageBeforeBetweenAndAfterFrames) {
  std::mt19937_64 rng(7);
  std::string junk(777, '\0');
  for (auto& c : junk) c = char(rng());
  const std::string s = sample_stream();
  int bad = 0;
  auto got = decode_all(junk + s + junk.substr(0, 100) + s, &bad);
  EXPECT_EQ(got.size(), 2 * sample_messages().size());
  EXPECT_GE(bad, 2);
}

// Writes a frame header at `at` that passes the header check and claims `len` payload bytes.
void plant_header(std::string& s, size_t at, MsgType type, uint32_t len) {
  char* h = s.data() + at;
  std::memcpy(h, kMagic, 4);
  h[4] = char(kVersion);
  h[5] = char(type);
  for (int b = 0; b < 4; ++b) h[8 + b] = char(len >> (8 * b));
  const char hb[6] = {h[4], h[5], h[8], h[9], h[10], h[11]};
  const uint32_t hc = crc32(hb, 6);
  h[6] = char(hc & 0xFF);
  h[7] = char((hc >> 8) & 0xFF);
}

// Hostile bytes (random, with planted headers that pass the header check and claim up to the
// largest allowed payload, and counts inside payloads) must cost memory in proportion to the
// input, never to what the input claims: measured with a counting operator new.
TEST(Wire, RandomGarbageNeverCrashesOrAllocatesWildly) {
  std::mt19937_64 rng(11);
  size_t worst_peak = 0, worst_largest = 0, worst_input = 0;
  for (int round = 0; round < 400; ++round) {
    std::string junk(size_t(64 + rng() % 4096), '\0');
    for (auto& c : junk) c = char(rng());
    if (round % 2) {
      const uint32_t claims[] = {kMaxPayload, kMaxPayload - 1, 1u << 24, uint32_t(junk.size())};
      plant_header(junk, rng() % (junk.size() - kHeaderSize), MsgType(1 + rng() % 12), claims[rng() % 4]);
    }
    if (round % 3 == 0) {
      // A frame with a valid checksum whose payload is a huge element count.
      std::string f = encode(MemoryEvents{});
      f.resize(kHeaderSize);
      std::string payload = "\xff\xff\xff\xff\x0f";
      f += payload;
      plant_header(f, 0, MsgType::kMemoryEvents, uint32_t(payload.size()));
      uint32_t c = crc32(f.data() + 4, 8);
      c = crc32(f.data() + kHeaderSize, payload.size(), c);
      for (int b = 0; b < 4; ++b) f[12 + b] = char(c >> (8 * b));
      junk.insert(rng() % junk.size(), f);
    }
    edo::test::reset_allocation_stats();
    (void)decode_all(junk);
    (void)decode_all(junk, nullptr, 1 + rng() % 100);
    const auto st = edo::test::allocation_stats();
    worst_peak = std::max(worst_peak, st.peak_live_above_start);
    worst_largest = std::max(worst_largest, st.largest_request);
    worst_input = std::max(worst_input, junk.size());
    // The decoder's buffer holds the input once; decoded messages are no bigger than it.
    ASSERT_LE(st.peak_live_above_start, 8 * junk.size() + 65536) << "round " << round;
    ASSERT_LE(st.largest_request, 2 * junk.size() + 4096) << "round " << round;
  }
  std::printf("largest input %zu bytes: peak live %zu bytes, largest single allocation %zu bytes\n", worst_input,
              worst_peak, worst_largest);
}

TEST(Wire, MalformedPayloadWithValidChecksumIsRejected) {
  // A frame whose payload claims a string longer than itself.
  std::string payload = "\x05\xff\xff\xff\x0f";
  std::string f(kHeaderSize, '\0');
  std::memcpy(f.data(), kMagic, 4);
  f[4] = char(kVersion);
  f[5] = char(MsgType::kNote);
  f[8] = char(payload.size());
  {
    char hb[6] = {f[4], f[5], f[8], f[9], f[10], f[11]};
    const uint32_t hc = crc32(hb, 6);
    f[6] = char(hc & 0xFF);
    f[7] = char((hc >> 8) & 0xFF);
  }
  f += payload;
  uint32_t c = crc32(f.data() + 4, 8);
  c = crc32(payload.data(), payload.size(), c);
  for (int k = 0; k < 4; ++k) f[12 + k] = char((c >> (8 * k)) & 0xFF);
  int bad = 0;
  auto got = decode_all(f + encode(Steps{1}), &bad);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(bad, 1);
  Message m;
  EXPECT_FALSE(decode_payload(MsgType::kNote, payload, m));
  EXPECT_FALSE(decode_payload(static_cast<MsgType>(200), "", m));
}

TEST(Wire, WeightRowsRoundTripAndRejectBadCounts) {
  WeightRows w;
  w.table = 3; w.snapshot = 2; w.part = 1; w.parts = 4; w.dtype = 1; w.dim = 2;
  w.table_rows = 1u << 30; w.population = (1u << 30) - 2; w.hot_rows = 2;
  w.rows = {5, 1u << 29, 17};
  w.values = std::string(3 * 2 * 2, '\x7f');
  const auto back = decode_all(encode(w));
  ASSERT_EQ(back.size(), 1u);
  const auto& v = std::get<WeightRows>(back[0]);
  EXPECT_EQ(v.rows, w.rows);
  EXPECT_EQ(v.values, w.values);
  EXPECT_EQ(v.population, w.population);
  EXPECT_EQ(encode(back[0]), encode(Message(w)));
  // A part number past the part count, or more hot rows than rows, is malformed.
  Message out;
  for (auto bad : {std::pair<uint32_t, uint64_t>{4, 2}, std::pair<uint32_t, uint64_t>{0, 4}}) {
    WeightRows b = w;
    b.part = bad.first;
    b.hot_rows = bad.second;
    const std::string f = encode(b);
    EXPECT_FALSE(decode_payload(MsgType::kWeightRows, std::string_view(f).substr(kHeaderSize), out));
  }
}

// Hello protocol 2 carries the run id; a protocol-1 Hello (written before run ids) still
// decodes, with no run id.
TEST(Wire, HelloCarriesTheRunIdAndOlderHellosDecodeWithout) {
  Hello h;
  h.pid = 7;
  h.command = "job";
  h.settings = {{"EDO_FLUSH_MS", "1000"}};
  h.run_id = "0123456789abcdef";
  Message m;
  std::string frame = encode(h);
  ASSERT_TRUE(decode_payload(MsgType::kHello, std::string_view(frame).substr(kHeaderSize), m));
  EXPECT_EQ(std::get<Hello>(m).protocol, kHelloIdentity);
  EXPECT_EQ(std::get<Hello>(m).run_id, "0123456789abcdef");
  Hello old = h;
  old.protocol = 1;  // the encoder writes what protocol 1 had: no run id
  frame = encode(old);
  ASSERT_TRUE(decode_payload(MsgType::kHello, std::string_view(frame).substr(kHeaderSize), m));
  EXPECT_EQ(std::get<Hello>(m).run_id, "");
  EXPECT_EQ(std::get<Hello>(m).settings.size(), 1u);
  EXPECT_EQ(encode(std::get<Hello>(m)).size(), frame.size());
}

// Hello protocol 3 carries where the process sits in a distributed job (issue 22); a
// protocol-2 Hello (written before) still decodes, with an empty identity.
TEST(Wire, HelloCarriesTheJobIdentityAndProtocol2DecodesWithout) {
  Hello h;
  h.pid = 9;
  h.rank = 3;
  h.run_id = "r";
  h.job_id = "elastic-7";
  h.master = "10.0.0.1:29500";
  h.world_size = 4;
  h.group_rank = 1;
  h.local_world_size = 2;
  Message m;
  std::string frame = encode(h);
  ASSERT_TRUE(decode_payload(MsgType::kHello, std::string_view(frame).substr(kHeaderSize), m));
  const Hello& back = std::get<Hello>(m);
  EXPECT_EQ(back.job_id, "elastic-7");
  EXPECT_EQ(back.master, "10.0.0.1:29500");
  EXPECT_EQ(back.world_size, 4);
  EXPECT_EQ(back.group_rank, 1);
  EXPECT_EQ(back.local_world_size, 2);
  Hello old = h;
  old.protocol = kHelloRunId;  // what a protocol-2 tracer wrote: no identity
  frame = encode(old);
  ASSERT_TRUE(decode_payload(MsgType::kHello, std::string_view(frame).substr(kHeaderSize), m));
  EXPECT_EQ(std::get<Hello>(m).run_id, "r");
  EXPECT_EQ(std::get<Hello>(m).job_id, "");
  EXPECT_FALSE(std::get<Hello>(m).world_size.has_value());
  EXPECT_EQ(encode(std::get<Hello>(m)).size(), frame.size());
}
