// The plan fuzz target's driver where the libFuzzer harness is not in the tree: every corpus
// file once, then seeded random mutations of them (flips, insertions, deletions, splices,
// truncations) for EDO_FUZZ_SECONDS (default 5). A finding aborts, like under libFuzzer.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::string> corpus;
  for (int a = 1; a < argc; ++a)
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[a])) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      corpus.push_back(ss.str());
    }
  if (corpus.empty()) {
    std::fprintf(stderr, "plan_replay: no corpus files given\n");
    return 2;
  }
  for (const auto& s : corpus) LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  const char* env = std::getenv("EDO_FUZZ_SECONDS");
  const double secs = env ? std::atof(env) : 5.0;
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  uint64_t runs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
    std::string s = corpus[rng() % corpus.size()];
    for (int k = 1 + int(rng() % 8); k > 0; --k) {
      if (s.empty()) break;
      const size_t pos = rng() % s.size();
      switch (rng() % 6) {
        case 0: s[pos] = char(s[pos] ^ (1 << (rng() % 8))); break;
        case 1: s[pos] = char(rng()); break;
        case 2: s.insert(pos, 1, char(rng())); break;
        case 3: s.erase(pos, 1 + rng() % 16); break;
        case 4: {
          const std::string& o = corpus[rng() % corpus.size()];
          s.insert(pos, o.substr(rng() % o.size(), rng() % 64));
          break;
        }
        case 5: s.resize(pos); break;
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    ++runs;
  }
  std::printf("plan_replay: %zu corpus files and %llu mutations (seed %llu), no finding\n", corpus.size(),
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(seed));
  return 0;
}
