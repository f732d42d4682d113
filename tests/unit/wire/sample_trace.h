// A realistic frame stream (two sessions, every message type, a real TableAggregate delta)
// shared by the wire unit tests and the wire fuzz test.
#pragma once

#include <string>
#include <vector>

#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"

namespace edo::wire::sample {

inline std::vector<Message> sample_messages() {
  std::vector<Message> m;
  Hello h;
  h.pid = 4242; h.ppid = 1; h.rank = 3; h.local_rank = 1; h.start_unix_ns = 1700000000123456789;
  h.host = "node-7"; h.command = "python3 train.py --lr 0.1"; h.tool_version = "0.1.0";
  h.settings = {{"EDO_FLUSH_MS", "1000"}, {"EDO_EXACT_ROWS", "67108864"}};
  m.push_back(h);
  m.push_back(TableReg{0, "model.emb", 0x7f0000001000, 1000, 16, 0, 1, 0});
  m.push_back(TableReg{1, "lm_head", 0x7f0000001000, 1000, 16, 0, 1, 0});
  m.push_back(Tie{0, 1});
  stats::StatsConfig cfg;
  stats::TableIngestor ing(1000, cfg);
  std::vector<int64_t> idx;
  for (int i = 0; i < 5000; ++i) idx.push_back((i * 31) % 1000);
  ing.add(idx.data(), idx.size());
  m.push_back(TableDelta{0, ing.take_delta().serialize()});
  m.push_back(ExtraBytes{0, "adam.exp_avg", 64000});
  m.push_back(Steps{12});
  MemoryEvents me;
  me.events.push_back({10, 64000, 0x7f0000001000, 0, 0, "cudaMalloc"});
  me.events.push_back({20, 4096, 0x7f0000100000, 7, 0, "cudaMallocAsync"});
  me.events.push_back({30, -4096, 0x7f0000100000, 7, 0, "cudaFreeAsync"});
  m.push_back(me);
  m.push_back(KernelStats{{{"embedding_bag_kernel", 10, 123456, {"model.emb"}, {{"model.emb", 10, 123456}}},
                           {"gemm", 3, 999, {}, {}}}});
  m.push_back(RangeStats{{{"forward", 2, 1000, 5000, 64000}, {"model::embedding", 1, 10, 0, 0}}});
  m.push_back(Dropped{{{"batches", 1}, {"indices", 100}}});
  m.push_back(Note{"cupti", "unavailable: no CUDA driver"});
  m.push_back(Goodbye{5000000000, EndReason::kSignal, 15});
  Hello h2 = h;
  h2.pid = 4243; h2.rank.reset(); h2.local_rank.reset();
  m.push_back(h2);
  m.push_back(Steps{1});
  m.push_back(Goodbye{1, EndReason::kExit, 0});
  return m;
}

inline std::string sample_stream(std::vector<size_t>* frame_ends = nullptr) {
  std::string s;
  for (const auto& msg : sample_messages()) {
    encode(msg, s);
    if (frame_ends) frame_ends->push_back(s.size());
  }
  return s;
}

// Decodes everything; returns the messages and counts corrupt reports.
inline std::vector<Message> decode_all(const std::string& bytes, int* corrupt = nullptr, size_t chunk = 0) {
  StreamDecoder d;
  std::vector<Message> out;
  int bad = 0;
  auto pull = [&] {
    Message m;
    while (true) {
      auto r = d.next(m);
      if (r.status == StreamDecoder::Status::kNeedMore) break;
      if (r.status == StreamDecoder::Status::kCorrupt) { ++bad; continue; }
      out.push_back(m);
    }
  };
  if (chunk == 0) {
    d.feed(bytes.data(), bytes.size());
    pull();
  } else {
    for (size_t i = 0; i < bytes.size(); i += chunk) {
      d.feed(bytes.data() + i, std::min(chunk, bytes.size() - i));
      pull();
    }
  }
  if (corrupt) *corrupt = bad;
  return out;
}

}  // namespace edo::wire::sample
