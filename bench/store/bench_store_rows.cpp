// The .edodb's largest row sets, a recording's device memory timeline and its kernels, saved and
// loaded by ProfileStore (each column bound and read through its declaration, by name:
// db/src/record_columns.h), beside the floor: the same rows written and read by hand-written
// SQL with positional binds and one prepared statement each, in the same kind of file.
// Printed side by side per repetition (interleaved, so that both see the same machine), then the
// medians, the target (the store within 1.25x of the floor) and the ratio, with the load average.
// Usage: bench_store_rows [--events N] [--kernels K] [--reps R] [--dir DIR]
//   (defaults: 1000000 memory events, 20000 kernels with 2 tables each, 5 repetitions)
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/profile.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  uint64_t events = 1'000'000;
  uint64_t kernels = 20'000;
  int reps = 5;
  std::string dir;
};

edo::model::Profile make_profile(const Options& o) {
  edo::model::Profile p;
  edo::model::Session s;
  s.id = 1;
  s.command = "python3 train.py";
  s.host = "bench";
  s.source = "synth";
  p.sessions.push_back(s);
  p.memory_events.reserve(o.events);
  for (uint64_t i = 0; i < o.events; ++i) {
    edo::model::MemoryEvent e;
    e.session_id = 1;
    e.time_ns = static_cast<int64_t>(i * 1000);
    e.bytes = (i % 2 ? -1 : 1) * static_cast<int64_t>(4096 + (i % 97) * 512);
    e.address = 0x7f0000000000ULL + (i / 2) * 4096;
    e.stream = 0x55aa00000000ULL + i % 4;
    e.device = static_cast<int32_t>(i % 8);
    e.kind = i % 3 ? "cudaMalloc" : "cudaMallocAsync";
    e.table = i % 5 ? "" : "emb.user";
    p.memory_events.push_back(std::move(e));
  }
  for (uint64_t i = 0; i < o.kernels; ++i) {
    edo::model::KernelStat k;
    k.session_id = 1;
    k.name = "void fbgemm::kernel_" + std::to_string(i) + "<float>(at::PackedTensorAccessor64)";
    k.launches = i + 1;
    k.total_ns = (i + 1) * 2500;
    k.tables = {"emb.user", "emb.item"};
    k.per_table = {{"emb.user", i + 1, (i + 1) * 1500}, {"emb.item", i + 1, (i + 1) * 1000}};
    p.kernels.push_back(std::move(k));
  }
  return p;
}

// The floor: the same rows by hand, positional binds, one prepared statement per table, in a
// file of the same schema (a copy of an empty store's file).
void floor_save(const std::string& path, const edo::model::Profile& p) {
  SQLite::Database d(path, SQLite::OPEN_READWRITE);
  SQLite::Transaction txn(d);
  SQLite::Statement ev(d, "INSERT INTO memory_events(session_id, time_ns, bytes, address, stream, device, kind, table_name) VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& e : p.memory_events) {
    ev.reset();
    ev.bind(1, e.session_id);
    ev.bind(2, e.time_ns);
    ev.bind(3, e.bytes);
    ev.bind(4, static_cast<int64_t>(e.address));
    ev.bind(5, static_cast<int64_t>(e.stream));
    ev.bind(6, e.device);
    ev.bind(7, e.kind);
    ev.bind(8, e.table);
    ev.exec();
  }
  SQLite::Statement k(d, "INSERT INTO kernels(session_id, name, launches, total_ns, tables) VALUES (?,?,?,?,?)");
  SQLite::Statement kt(d, "INSERT INTO kernel_tables(session_id, kernel, table_name, launches, total_ns) VALUES (?,?,?,?,?)");
  for (const auto& x : p.kernels) {
    k.reset();
    k.bind(1, x.session_id);
    k.bind(2, x.name);
    k.bind(3, static_cast<int64_t>(x.launches));
    k.bind(4, static_cast<int64_t>(x.total_ns));
    k.bind(5, x.tables[0] + "\n" + x.tables[1]);
    k.exec();
    for (const auto& t : x.per_table) {
      kt.reset();
      kt.bind(1, x.session_id);
      kt.bind(2, x.name);
      kt.bind(3, t.table);
      kt.bind(4, static_cast<int64_t>(t.launches));
      kt.bind(5, static_cast<int64_t>(t.total_ns));
      kt.exec();
    }
  }
  txn.commit();
}

size_t floor_load(const std::string& path) {
  SQLite::Database d(path, SQLite::OPEN_READONLY);
  std::vector<edo::model::MemoryEvent> events;
  SQLite::Statement q(d, "SELECT session_id, time_ns, bytes, address, stream, device, kind, table_name FROM memory_events ORDER BY session_id, time_ns, rowid");
  while (q.executeStep()) {
    edo::model::MemoryEvent e;
    e.session_id = q.getColumn(0).getInt64();
    e.time_ns = q.getColumn(1).getInt64();
    e.bytes = q.getColumn(2).getInt64();
    e.address = static_cast<uint64_t>(q.getColumn(3).getInt64());
    e.stream = static_cast<uint64_t>(q.getColumn(4).getInt64());
    e.device = q.getColumn(5).getInt();
    e.kind = q.getColumn(6).getString();
    e.table = q.getColumn(7).getString();
    events.push_back(std::move(e));
  }
  std::vector<edo::model::KernelStat> kernels;
  SQLite::Statement k(d, "SELECT session_id, name, launches, total_ns, tables FROM kernels ORDER BY rowid");
  while (k.executeStep()) {
    edo::model::KernelStat x;
    x.session_id = k.getColumn(0).getInt64();
    x.name = k.getColumn(1).getString();
    x.launches = static_cast<uint64_t>(k.getColumn(2).getInt64());
    x.total_ns = static_cast<uint64_t>(k.getColumn(3).getInt64());
    const std::string tables = k.getColumn(4).getString();
    x.tables = {tables.substr(0, tables.find('\n')), tables.substr(tables.find('\n') + 1)};
    kernels.push_back(std::move(x));
  }
  std::vector<edo::model::KernelTableStat> per_table;
  SQLite::Statement qk(d, "SELECT session_id, kernel, table_name, launches, total_ns FROM kernel_tables ORDER BY rowid");
  while (qk.executeStep())
    per_table.push_back({qk.getColumn(2).getString(), static_cast<uint64_t>(qk.getColumn(3).getInt64()),
                         static_cast<uint64_t>(qk.getColumn(4).getInt64())});
  return events.size() + kernels.size() + per_table.size();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_store_rows: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--events") o.events = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--kernels") o.kernels = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--dir") o.dir = next();
    else {
      std::fprintf(stderr, "bench_store_rows: unknown option %s; usage: bench_store_rows [--events N] [--kernels K] [--reps R] [--dir DIR]\n", a.c_str());
      return 2;
    }
  }
  const bool own_dir = o.dir.empty();
  if (own_dir) o.dir = (fs::temp_directory_path() / ("edo-bench-store-" + std::to_string(getpid()))).string();
  fs::create_directories(o.dir);
  const edo::model::Profile profile = make_profile(o);
  const std::string store_path = o.dir + "/store.edodb", floor_path = o.dir + "/floor.edodb", empty = o.dir + "/empty.edodb";
  { edo::db::ProfileStore(empty, edo::db::ProfileStore::Mode::kCreate); }
  std::printf("%llu memory events, %llu kernels x 2 tables; load average %s\n", static_cast<unsigned long long>(o.events),
              static_cast<unsigned long long>(o.kernels), load_average().c_str());
  std::printf("%-4s %12s %12s %12s %12s\n", "rep", "store save s", "floor save s", "store load s", "floor load s");
  std::vector<double> ss, fs_, sl, fl;
  for (int r = 0; r < o.reps; ++r) {
    edo::model::Profile p = profile;
    auto t0 = Clock::now();
    {
      edo::db::ProfileStore store(store_path, edo::db::ProfileStore::Mode::kCreate);
      store.save(p, false);
    }
    ss.push_back(seconds_since(t0));
    fs::copy_file(empty, floor_path, fs::copy_options::overwrite_existing);
    t0 = Clock::now();
    floor_save(floor_path, profile);
    fs_.push_back(seconds_since(t0));
    t0 = Clock::now();
    const edo::model::Profile back = edo::db::ProfileStore(store_path, edo::db::ProfileStore::Mode::kReadOnly).load();
    sl.push_back(seconds_since(t0));
    t0 = Clock::now();
    const size_t rows = floor_load(floor_path);
    fl.push_back(seconds_since(t0));
    if (back.memory_events.size() != o.events || rows != o.events + 3 * o.kernels) {
      std::fprintf(stderr, "bench_store_rows: read back %zu events, %zu floor rows: wrong\n", back.memory_events.size(), rows);
      return 1;
    }
    std::printf("%-4d %12.3f %12.3f %12.3f %12.3f\n", r + 1, ss.back(), fs_.back(), sl.back(), fl.back());
  }
  const double target = 1.25;
  std::printf("median save: store %.3f s, floor %.3f s, ratio %.2f (target <= %.2f)\n", median(ss), median(fs_), median(ss) / median(fs_), target);
  std::printf("median load: store %.3f s, floor %.3f s, ratio %.2f (target <= %.2f)\n", median(sl), median(fl), median(sl) / median(fl), target);
  std::printf("load average %s\n", load_average().c_str());
  if (own_dir) fs::remove_all(o.dir);
  return 0;
}
