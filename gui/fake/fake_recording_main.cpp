// edo-fake-recording: writes a fake GPU recording (see fake_gpu_recording.h) for the
// dashboard's tests, benchmark and screenshots.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "fake_gpu_recording.h"

int main(int argc, char** argv) {
  CLI::App app{"edo-fake-recording: a fake GPU recording (device memory timeline, kernels, NVTX ranges) made without a GPU"};
  std::string out;
  edo::gui::fake::FakeGpuRecordingOptions o;
  app.add_option("-o,--output", out, "database file to write (replaced)")->required();
  app.add_option("--tables", o.tables, "tables per process")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--rows", o.rows, "rows of the biggest table")->capture_default_str()->check(CLI::Range(uint64_t{16}, uint64_t{1} << 34));
  app.add_flag("--same-rows", o.same_rows, "every table has --rows rows");
  app.add_option("--dim", o.dim, "embedding dimension")->capture_default_str()->check(CLI::Range(1u, 4096u));
  app.add_option("--zipf", o.zipf, "Zipf exponent of the first table")->capture_default_str()->check(CLI::Range(0.0, 5.0));
  app.add_option("--lookups", o.lookups, "lookups per table")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 36));
  app.add_option("--sessions", o.sessions, "processes")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--memory-events", o.memory_events, "device allocation events per process")->capture_default_str();
  app.add_option("--steps", o.steps, "training steps")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  app.add_option("--duration", o.duration_s, "seconds")->capture_default_str()->check(CLI::Range(0.001, 1e6));
  uint64_t dropped = 0;
  app.add_option("--dropped", dropped, "host lookup batches the first process dropped (the 'batches' loss counter)")->capture_default_str();
  app.add_option("--loss", o.loss_scale, "record a training loss per step of the first process, this scale (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--loss-nan-at", o.loss_nan_at, "the loss is NaN from this step on (0: never)")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (dropped) o.drops["batches"] = dropped;
  try {
    edo::gui::fake::write_fake_gpu_recording(out, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edo-fake-recording: %s\n", e.what());
    return 1;
  }
  return 0;
}
