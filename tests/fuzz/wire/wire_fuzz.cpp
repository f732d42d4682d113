// Mutation fuzzing of the frame decoder and the collector's frame -> profile builder:
// bit flips, byte insertions/deletions, splices and truncations of a real trace. Must never
// crash, hang, or throw; every run is reproducible from the printed seed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "edo/collector/collector.h"
#include "sample_trace.h"

int main(int argc, char** argv) {
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20261130;
  const char* secs_env = std::getenv("EDO_FUZZ_SECONDS");
  const double secs = secs_env ? std::atof(secs_env) : 5.0;
  std::mt19937_64 rng(seed);
  const std::string base = edo::wire::sample::sample_stream();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t iters = 0, frames = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
    std::string s = base;
    const int muts = 1 + int(rng() % 8);
    for (int k = 0; k < muts && !s.empty(); ++k) {
      const size_t pos = rng() % s.size();
      switch (rng() % 6) {
        case 0: s[pos] = char(s[pos] ^ (1 << (rng() % 8))); break;
        case 1: s[pos] = char(rng()); break;
        case 2: s.insert(pos, 1, char(rng())); break;
        case 3: s.erase(pos, 1 + rng() % 16); break;
        case 4: s.insert(pos, base.substr(rng() % base.size(), rng() % 64)); break;
        case 5: s.resize(pos); break;
      }
    }
    edo::collector::ProfileBuilder b("fuzz");
    const int st = b.open_stream("fuzz");
    size_t i = 0;
    while (i < s.size()) {
      const size_t n = std::min(s.size() - i, size_t(1 + rng() % 512));
      b.feed(st, s.data() + i, n);
      i += n;
    }
    b.close_stream(st);
    b.finish();
    frames += b.frames();
    ++iters;
  }
  std::printf("wire_fuzz: seed %llu, %llu inputs, %llu frames decoded, no crash\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(iters),
              static_cast<unsigned long long>(frames));
  return 0;
}
