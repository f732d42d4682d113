// A GPU's figures for the tuner's device model (edo/tuner/device_model.h, docs/tuning.md
// "Device model"): the rate random 32-byte sectors are read at, the streaming bandwidth, the
// on-chip bandwidth, the host link and the launch overhead, each with where it came from.
//
// Where profiles come from:
//   * stored with edo (device_profiles_builtin.cpp): the NVIDIA H200 measured by `edo bench
//     --backend cuda` on 2026-11-30;
//   * saved by the user: `edo bench --backend cuda --save-device NAME` writes an edo.device/1
//     file into device_dir();
//   * a file given to `edo tune --target-device FILE`: an edo.device/1 document or the
//     edo.bench/1 JSON of `edo bench --backend cuda --json`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edo::tuner {

inline constexpr const char* kDeviceSchema = "edo.device/1";

struct DeviceProfile {
  std::string name;    // the GPU's name as a recording names it ("NVIDIA H200")
  std::string source;  // how and when its figures were obtained, one line
  // Bytes of the unit device memory is read in: a row read touches whole sectors (32 B on
  // NVIDIA GPUs since Fermi: CUDA C++ Programming Guide, "Device Memory Accesses"; 64 B cache
  // lines for a CPU profile).
  double sector_bytes = 32;
  // Random-row reads: `gather_rows_per_s` rows of `gather_row_bytes` each (edo bench's fp32
  // gather; 0: unknown, the sectors are read at memory_gbs).
  double gather_rows_per_s = 0;
  double gather_row_bytes = 0;
  double memory_gbs = 0;     // device-to-device copy (streaming reads and writes), GB/s
  double onchip_gbs = 0;     // shared memory / L1 (PQ codebooks, QR's remainders, low rank's B), GB/s
  double host_link_gbs = 0;  // host-to-device (offload misses), GB/s
  bool host_link_measured = false;
  std::string host_link_basis;
  double launch_us = 0;      // one kernel launch
  bool launch_measured = false;
  std::string launch_basis;
  // The storage an SSD-backed table would live on, as `edo bench --storage DIR --save-device
  // NAME` measured it (edo::kernels::StorageFigures in JSON, edo/kernels/storage_probe.h);
  // null when never measured.
  nlohmann::json storage;

  // Random sectors per second: the gather's rows/s times the sectors of one of its rows, or
  // memory_gbs in sectors when the gather is unknown.
  double sectors_per_s() const;
};

// Throws std::invalid_argument naming the field when a figure is missing or not a positive
// number (a profile must be usable before a tune relies on it).
void check_device(const DeviceProfile& d, const std::string& where);

// edo.device/1 (device_to_json) or the edo.bench/1 JSON of `edo bench` (any backend: a CPU
// bench gives a CPU profile with 64-byte lines). `name` overrides the document's name when
// not empty. Throws std::invalid_argument naming what is missing.
DeviceProfile device_from_json(const nlohmann::json& doc, const std::string& where, const std::string& name = "");
nlohmann::json device_to_json(const DeviceProfile& d);

// The profiles edo ships (compiled in).
const std::vector<DeviceProfile>& builtin_devices();

// Where `edo bench --save-device` writes and the tuner reads the user's profiles:
// $EDO_DEVICE_DIR, else $XDG_CONFIG_HOME/edo/devices, else ~/.config/edo/devices.
std::string device_dir();

// The built-in profiles, then every readable *.json in device_dir() (a saved profile of the
// same name replaces a built-in one). Unreadable files are skipped with a line in `problems`.
std::vector<DeviceProfile> stored_devices(std::vector<std::string>* problems = nullptr);

// "NVIDIA H200, NVIDIA A100 (saved)" — the names stored_devices() has, for messages.
std::string stored_device_names();

// The stored profile a name names: equal up to case, spaces and an "NVIDIA " prefix
// ("h200", "NVIDIA H200" and "nvidia  h200" name the same). nullopt when none.
std::optional<DeviceProfile> find_stored_device(const std::string& name);

// --target-device VALUE: a stored profile's name, or a path to an edo.device/1 or edo.bench/1
// file. Throws std::invalid_argument with one line naming the stored devices and how to add
// one when VALUE is neither.
DeviceProfile resolve_target_device(const std::string& value);

// Writes `d` as device_dir()/<file-safe name>.json (the directory created when missing);
// returns the path. Throws std::runtime_error naming the path when it cannot be written.
std::string save_device(const DeviceProfile& d);

}  // namespace edo::tuner
