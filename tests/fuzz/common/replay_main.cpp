// The fuzz targets' driver for builds without libFuzzer (any compiler, sanitizer builds too):
//
//   <name>_replay [--name N] [--mutate-seconds S] [--seed X] PATH...
//
// runs every file under each PATH (the committed corpus: seeds and regress-* inputs of bugs
// the fuzzers found) through LLVMFuzzerTestOneInput once, then, for S seconds, random
// mutations of them (bit flips, byte insertions and deletions, splices, truncations; seeded,
// the seed printed). A finding crashes, aborts or trips a sanitizer, exactly as under
// libFuzzer; the input is written to ./<name>-mutant-crash first so it can be kept.
#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

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

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void run_one(const std::string& s) { LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  const int muts = 1 + int(rng() % 8);
  for (int k = 0; k < muts; ++k) {
    if (s.empty()) {
      s.push_back(char(rng()));
      continue;
    }
    const size_t pos = rng() % s.size();
    switch (rng() % 7) {
      case 0: s[pos] = char(s[pos] ^ (1 << (rng() % 8))); break;
      case 1: s[pos] = char(rng()); break;
      case 2: s.insert(pos, 1, char(rng())); break;
      case 3: s.erase(pos, 1 + rng() % 16); break;
      case 4: {  // splice in a piece of another input
        const std::string& o = corpus[rng() % corpus.size()];
        if (!o.empty()) s.insert(pos, o.substr(rng() % o.size(), rng() % 64));
        break;
      }
      case 5: s.resize(pos); break;
      case 6: {  // an interesting 32-bit value (lengths, counts)
        static const uint32_t v[] = {0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff};
        const uint32_t x = v[rng() % (sizeof v / sizeof v[0])];
        for (int b = 0; b < 4 && pos + size_t(b) < s.size(); ++b) s[pos + size_t(b)] = char(x >> (8 * b));
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string name = "fuzz";
  double mutate_seconds = 0;
  uint64_t seed = std::random_device{}();
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--name" && i + 1 < argc) name = argv[++i];
    else if (a == "--mutate-seconds" && i + 1 < argc) mutate_seconds = std::atof(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else paths.emplace_back(a);
  }
  std::vector<std::string> corpus;
  size_t regressions = 0;
  for (const auto& p : paths) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s replay: %s: no such file or folder\n", name.c_str(), p.c_str());
      return 2;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      corpus.push_back(slurp(f));
      regressions += f.filename().string().rfind("regress-", 0) == 0;
      run_one(corpus.back());
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "%s replay: no inputs\n", name.c_str());
    return 2;
  }
  std::mt19937_64 rng(seed);
  uint64_t mutants = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string crash_file = name + "-mutant-crash";
  const int fd = mutate_seconds > 0 ? open(crash_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
  while (fd >= 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < mutate_seconds) {
    const std::string m = mutate(corpus[rng() % corpus.size()], corpus, rng);
    // Kept on disk while it runs: a crash leaves it behind for the report.
    if (ftruncate(fd, 0) != 0 || pwrite(fd, m.data(), m.size(), 0) != ssize_t(m.size())) break;
    run_one(m);
    ++mutants;
  }
  if (fd >= 0) {
    close(fd);
    std::filesystem::remove(crash_file);
  }
  std::printf("%s replay: %zu corpus inputs (%zu regressions) and %llu random mutations (seed %llu), no finding\n",
              name.c_str(), corpus.size(), regressions, static_cast<unsigned long long>(mutants),
              static_cast<unsigned long long>(seed));
  return 0;
}
