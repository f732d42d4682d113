#include "fake_gpu_recording.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/drops.h"
#include "edo/stats/table_stats.h"

namespace edo::gui::fake {

namespace {

int64_t ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// A training loss per step: decaying from 2.5 towards 0.5 (times the scale), with seeded noise.
std::vector<model::StepLoss> fake_losses(const FakeGpuRecordingOptions& o) {
  std::mt19937_64 rng(o.seed * 7919 + 17);
  std::normal_distribution<double> noise(0.0, 0.04);
  std::vector<model::StepLoss> out;
  const double tau = std::max(1.0, static_cast<double>(o.steps) / 5.0);
  for (uint64_t step = 1; step <= o.steps; ++step) {
    double loss = o.loss_scale * (0.5 + 2.0 * std::exp(-static_cast<double>(step) / tau)) * (1.0 + noise(rng));
    if (o.loss_nan_at && step >= o.loss_nan_at) loss = std::numeric_limits<double>::quiet_NaN();
    out.push_back({step, loss});
  }
  return out;
}
}  // namespace

model::Profile make_fake_gpu_profile(const FakeGpuRecordingOptions& o) {
  model::Profile p;
  std::mt19937_64 rng(o.seed);
  p.metadata["edo_version"] = "fake";
  p.metadata["fake.generator"] = "edo-fake-recording";

  std::vector<std::string> names;
  for (int t = 0; t < o.tables; ++t) names.push_back("model.sparse.emb_" + std::to_string(t));
  const std::string tied_name = "model.sparse.emb_shared_head";

  for (int s = 0; s < o.sessions; ++s) {
    model::Session session;
    session.id = s + 1;
    session.command = "python3 train_dlrm.py --fake-gpu-recording";
    session.host = "gpu-node-1";
    session.pid = 4000 + s;
    session.parent_pid = s == 0 ? 3999 : 4000;
    if (o.sessions > 1) session.rank = s, session.local_rank = s;
    session.start_unix_ns = 1'760'000'000'000'000'000 + s * 1'000'000;
    session.duration_ns = ns(o.duration_s);
    session.exit_code = 0;
    session.gpus = "synthetic GPU (edo-fake-recording)";
    session.source = "synth";
    if (s == 0) session.drops = o.drops;
    session.dropped_events = model::dropped_events_of(session.drops);
    session.steps = o.steps;
    if (s == 0 && o.loss_scale > 0) session.losses = fake_losses(o);
    p.sessions.push_back(session);

    // Tables: real aggregates from the statistics engine.
    stats::StatsConfig config;
    std::vector<model::Table> tables;
    for (int t = 0; t < o.tables; ++t) {
      model::Table table;
      table.session_id = session.id;
      table.name = names[static_cast<size_t>(t)];
      table.rows = o.same_rows ? o.rows : std::max<uint64_t>(16, o.rows >> (t % 4));
      table.dim = o.dim;
      table.dtype = "fp32";
      table.device = "cuda:" + std::to_string(s);
      table.base_address = 0x7f0000000000ull + (static_cast<uint64_t>(s) << 36) + (static_cast<uint64_t>(t) << 32);
      table.weight_bytes = table.rows * table.dim * 4;
      table.optimizer_bytes = 2 * table.weight_bytes;  // Adam moments
      table.grad_bytes = table.weight_bytes;
      stats::ZipfGenerator gen(table.rows, o.zipf + 0.05 * (t % 3), o.seed * 7919 + static_cast<uint64_t>(t) * 1000003 + static_cast<uint64_t>(s));
      stats::TableIngestor ingestor(table.rows, config);
      const uint64_t batch = 8192;
      const uint64_t per_window = std::max<uint64_t>(batch, o.lookups / 12);
      std::vector<int64_t> idx(batch);
      uint64_t done = 0, since_window = 0;
      while (done < o.lookups) {
        const size_t n = static_cast<size_t>(std::min(batch, o.lookups - done));
        gen.fill(idx.data(), n);
        ingestor.add(idx.data(), n);
        done += n;
        since_window += n;
        if (since_window >= per_window) {
          ingestor.close_window();
          since_window = 0;
        }
      }
      ingestor.close_window();
      table.aggregate = ingestor.take_delta();
      tables.push_back(std::move(table));
    }
    if (o.tie_last_table && !tables.empty()) {
      // A second name on the last table's weights (an output head tied to an embedding).
      model::Table head = tables.back();
      head.name = tied_name;
      head.optimizer_bytes = 0;
      head.grad_bytes = 0;
      stats::ZipfGenerator gen(head.rows, 0.8, o.seed + 17 + static_cast<uint64_t>(s));
      stats::TableIngestor ingestor(head.rows, config);
      std::vector<int64_t> idx(o.tied_name_reads ? std::min<uint64_t>(o.lookups / 4 + 1, 1 << 16) : 0);
      gen.fill(idx.data(), idx.size());
      if (!idx.empty()) ingestor.add(idx.data(), idx.size());
      ingestor.close_window();
      head.aggregate = ingestor.take_delta();
      p.ties.push_back({session.id, tables.back().name, tied_name});
      tables.push_back(std::move(head));
    }

    // Device memory timeline.
    std::vector<model::MemoryEvent> events;
    uint64_t address = 0x7e0000000000ull + (static_cast<uint64_t>(s) << 40);
    auto alloc = [&](double t, int64_t bytes, const std::string& table, const char* kind) {
      events.push_back({session.id, ns(t), bytes, address, 0, s, kind, table});
      address += static_cast<uint64_t>(bytes) + 4096;
      return events.back().address;
    };
    const double setup_end = o.duration_s * 0.05;
    for (int t = 0; t < o.tables; ++t) {
      const auto& table = tables[static_cast<size_t>(t)];
      alloc(setup_end * (t + 1) / (o.tables + 1), static_cast<int64_t>(table.weight_bytes), table.name, "cudaMalloc");
    }
    // The model's dense part and the CUDA context's workspace: no table.
    alloc(setup_end * 0.9, int64_t{256} << 20, "", "cudaMalloc");
    const double step_s = (o.duration_s - setup_end) / static_cast<double>(std::max<uint64_t>(o.steps, 1));
    const uint64_t per_step = std::max<uint64_t>(2, (o.memory_events - events.size()) / std::max<uint64_t>(o.steps, 1) / 2);
    std::uniform_int_distribution<int64_t> size(int64_t{256} << 10, int64_t{8} << 20);
    const uint64_t peak_step = o.steps * 2 / 3;
    for (uint64_t step = 0; step < o.steps; ++step) {
      const double t0 = setup_end + static_cast<double>(step) * step_s;
      if (step == 0) {
        for (int t = 0; t < o.tables; ++t) {
          const auto& table = tables[static_cast<size_t>(t)];
          // Gradients at the first backward pass, Adam's moments at the first optimizer step.
          alloc(t0 + step_s * 0.6 * (t + 1) / (o.tables + 1), static_cast<int64_t>(table.grad_bytes), table.name, "cudaMallocAsync");
          alloc(t0 + step_s * 0.9 * (t + 1) / (o.tables + 1), static_cast<int64_t>(table.optimizer_bytes), table.name, "cudaMallocAsync");
        }
      }
      // Activations: allocated through the forward pass, freed through the backward pass.
      std::vector<std::pair<uint64_t, int64_t>> live;
      for (uint64_t i = 0; i < per_step; ++i) {
        const double t = t0 + step_s * 0.45 * static_cast<double>(i) / static_cast<double>(per_step);
        int64_t bytes = size(rng);
        if (step == peak_step) bytes *= 3;  // a long sequence batch: the run's peak
        live.emplace_back(alloc(t, bytes, "", "cudaMallocAsync"), bytes);
      }
      for (uint64_t i = 0; i < live.size(); ++i) {
        const double t = t0 + step_s * (0.5 + 0.45 * static_cast<double>(i) / static_cast<double>(live.size()));
        const auto& [addr, bytes] = live[live.size() - 1 - i];
        events.push_back({session.id, ns(t), -bytes, addr, 0, s, "cudaFreeAsync", ""});
      }
    }
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
    p.memory_events.insert(p.memory_events.end(), events.begin(), events.end());

    // Kernels and NVTX ranges.
    const double steps = static_cast<double>(o.steps);
    auto table_list = [&](int first, int count) {
      std::vector<std::string> v;
      for (int t = first; t < std::min(o.tables, first + count); ++t) v.push_back(names[static_cast<size_t>(t)]);
      return v;
    };
    p.kernels.push_back({session.id, "void fbgemm_gpu::split_embedding_codegen_forward_unweighted_kernel<float, float>", o.steps * 2,
                         static_cast<uint64_t>(steps * 2 * 410e3), table_list(0, o.tables)});
    p.kernels.push_back({session.id, "void fbgemm_gpu::split_embedding_backward_codegen_adam_unweighted_kernel<float>", o.steps * 2,
                         static_cast<uint64_t>(steps * 2 * 950e3), table_list(0, o.tables)});
    p.kernels.push_back({session.id, "ampere_sgemm_128x64_tn", o.steps * 12, static_cast<uint64_t>(steps * 12 * 85e3), {}});
    p.kernels.push_back({session.id, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", o.steps * 30,
                         static_cast<uint64_t>(steps * 30 * 4e3), {}});
    p.kernels.push_back({session.id, "void at::native::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>", o.steps,
                         static_cast<uint64_t>(steps * 120e3), table_list(o.tables - 1, 1)});
    uint64_t lookups = 0;
    for (const auto& t : tables) lookups += t.aggregate.lookups();
    p.ranges.push_back({session.id, "train_step", o.steps, static_cast<uint64_t>(steps * step_s * 1e9 * 0.97), lookups, 0});
    p.ranges.push_back({session.id, "forward", o.steps, static_cast<uint64_t>(steps * step_s * 1e9 * 0.4), lookups, 0});
    p.ranges.push_back({session.id, "backward", o.steps, static_cast<uint64_t>(steps * step_s * 1e9 * 0.45), 0, 0});
    p.ranges.push_back({session.id, "optimizer::step", o.steps, static_cast<uint64_t>(steps * step_s * 1e9 * 0.1), 0, 0});
    for (auto& t : tables) p.tables.push_back(std::move(t));
  }
  return p;
}

void write_fake_gpu_recording(const std::string& path, const FakeGpuRecordingOptions& options) {
  model::Profile p = make_fake_gpu_profile(options);
  db::ProfileStore store(path, db::ProfileStore::Mode::kCreate);
  store.save(p);
}

}  // namespace edo::gui::fake
