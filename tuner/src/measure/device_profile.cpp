// Device profiles: reading and writing edo.device/1, deriving one from `edo bench` JSON, the
// user's profile directory, and finding a profile by name (edo/tuner/device_profile.h).
#include "edo/tuner/device_profile.h"

#include "edo/kernels/storage_probe.h"
#include "edo/model/tune_reasons.h"
#include "edo/tuner/tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace edo::tuner {

namespace fs = std::filesystem;
using json = nlohmann::json;

double DeviceProfile::sectors_per_s() const {
  if (gather_rows_per_s > 0 && gather_row_bytes > 0)
    return gather_rows_per_s * std::ceil(gather_row_bytes / sector_bytes);
  return memory_gbs * 1e9 / sector_bytes;
}

void check_device(const DeviceProfile& d, const std::string& where) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument(where + ": " + what + " (an edo.device/1 profile needs sector_bytes, memory_gbs, onchip_gbs, "
                                "host_link_gbs and launch_us; " + model::command_words().say({.code = model::Reason::kSaveDeviceProfile}) + ")");
  };
  if (d.name.empty()) bad("no device name");
  auto positive = [&](double v, const char* field) {
    if (!(v > 0) || !std::isfinite(v)) bad(std::string(field) + " is not a positive number");
  };
  positive(d.sector_bytes, "sector_bytes");
  positive(d.memory_gbs, "memory_gbs");
  positive(d.onchip_gbs, "onchip_gbs");
  positive(d.host_link_gbs, "host_link_gbs");
  if (!(d.launch_us >= 0) || !std::isfinite(d.launch_us)) bad("launch_us is not a number >= 0");
  if (d.gather_rows_per_s < 0 || d.gather_row_bytes < 0 || !std::isfinite(d.gather_rows_per_s) || !std::isfinite(d.gather_row_bytes))
    bad("gather_rows_per_s / gather_row_bytes are not numbers >= 0");
}

namespace {

double number_at(const json& j, const char* key, const std::string& where, bool required = true, double dflt = 0) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw std::invalid_argument(where + ": no \"" + key + "\"");
    return dflt;
  }
  if (!it->is_number()) throw std::invalid_argument(where + ": \"" + key + "\" is not a number");
  return it->get<double>();
}

std::string string_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool bool_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// An edo.bench/1 document: the anchors measured in the run and the fp32 gather.
DeviceProfile from_bench(const json& doc, const std::string& where) {
  DeviceProfile d;
  const std::string backend = string_at(doc, "backend");
  if (backend != "cuda" && backend != "cpu") throw std::invalid_argument(where + ": \"backend\" is neither cuda nor cpu");
  const json anchor = doc.value("anchor", json::object());
  const json config = doc.value("config", json::object());
  if (!anchor.is_object() || !config.is_object()) throw std::invalid_argument(where + ": \"anchor\" or \"config\" is not an object");
  const std::string kernels = string_at(config, "kernels");
  d.memory_gbs = number_at(anchor, "gbs", where + " anchor", true);
  for (const auto& r : doc.value("results", json::array())) {
    if (!r.is_object() || string_at(r, "spec") != "fp32") continue;
    d.gather_rows_per_s = number_at(r, "gather_rows_per_s", where + " fp32 result", true);
    d.gather_row_bytes = number_at(r, "bytes_per_row", where + " fp32 result", true);
  }
  if (backend == "cuda") {
    d.name = kernels.substr(0, kernels.find(','));  // the GPU's name (kernels/cuda device_description)
    d.sector_bytes = 32;
    d.onchip_gbs = number_at(anchor, "onchip_gbs", where + " anchor", true);
    d.host_link_gbs = number_at(anchor, "h2d_gbs", where + " anchor", true);
    d.host_link_measured = true;
    d.host_link_basis = "pinned host-to-device copy measured by edo bench";
    // edo bench does not time launches.
    d.launch_us = 3;
    d.launch_basis = "nominal, not measured (edo bench does not time launches)";
    d.source = model::command_words().say({.code = model::Reason::kBenchBackend, .name = "cuda"}) + " (" + where + ")";
  } else {
    // A CPU: 64-byte cache lines, STREAM triad as the streaming bandwidth, nothing launched.
    // On-chip reads (L1/L2) and the host link are nominal (a CPU has neither measured here).
    d.name = "CPU (" + kernels + ")";
    d.sector_bytes = 64;
    d.onchip_gbs = 10 * d.memory_gbs;
    d.host_link_gbs = 25;
    d.host_link_basis = "25 GB/s: nominal (the CPU backend's modelled host link)";
    d.launch_us = 0;
    d.launch_basis = "no kernel launches on a CPU";
    d.source = model::command_words().say({.code = model::Reason::kBenchBackend, .name = "cpu"}) + " (" + where + ")";
  }
  if (d.name.empty()) d.name = backend == "cuda" ? "CUDA device" : "CPU";
  return d;
}

}  // namespace

DeviceProfile device_from_json(const json& doc, const std::string& where, const std::string& name) {
  if (!doc.is_object()) throw std::invalid_argument(where + ": not a JSON object");
  const std::string schema = string_at(doc, "schema");
  DeviceProfile d;
  if (schema == "edo.bench/1") {
    d = from_bench(doc, where);
  } else if (schema == kDeviceSchema) {
    d.name = string_at(doc, "name");
    d.source = string_at(doc, "source");
    d.sector_bytes = number_at(doc, "sector_bytes", where, false, 32);
    d.gather_rows_per_s = number_at(doc, "gather_rows_per_s", where, false, 0);
    d.gather_row_bytes = number_at(doc, "gather_row_bytes", where, false, 0);
    d.memory_gbs = number_at(doc, "memory_gbs", where);
    d.onchip_gbs = number_at(doc, "onchip_gbs", where);
    d.host_link_gbs = number_at(doc, "host_link_gbs", where);
    d.host_link_measured = bool_at(doc, "host_link_measured");
    d.host_link_basis = string_at(doc, "host_link_basis");
    d.launch_us = number_at(doc, "launch_us", where);
    d.launch_measured = bool_at(doc, "launch_measured");
    d.launch_basis = string_at(doc, "launch_basis");
    if (doc.contains("storage") && !doc["storage"].is_null())
      d.storage = kernels::storage_to_json(kernels::storage_from_json(doc["storage"], where));  // checked, normalised
  } else {
    throw std::invalid_argument(where + ": schema \"" + schema + "\" is neither " + kDeviceSchema + " nor edo.bench/1 (" +
                                model::command_words().say({.code = model::Reason::kBenchJson}) + ")");
  }
  if (!name.empty()) d.name = name;
  check_device(d, where);
  return d;
}

json device_to_json(const DeviceProfile& d) {
  json j{{"schema", kDeviceSchema},
              {"name", d.name},
              {"source", d.source},
              {"sector_bytes", d.sector_bytes},
              {"gather_rows_per_s", d.gather_rows_per_s},
              {"gather_row_bytes", d.gather_row_bytes},
              {"memory_gbs", d.memory_gbs},
              {"onchip_gbs", d.onchip_gbs},
              {"host_link_gbs", d.host_link_gbs},
              {"host_link_measured", d.host_link_measured},
              {"host_link_basis", d.host_link_basis},
              {"launch_us", d.launch_us},
              {"launch_measured", d.launch_measured},
              {"launch_basis", d.launch_basis}};
  if (!d.storage.is_null()) j["storage"] = d.storage;
  return j;
}

std::string device_dir() {
  if (const char* e = std::getenv("EDO_DEVICE_DIR"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/edo/devices";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/edo/devices";
  return ".edo-devices";
}

namespace {

// Lower case, runs of blanks as one space, no "nvidia " prefix.
std::string normalized(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.rfind("nvidia ", 0) == 0) out = out.substr(7);
  return out;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  json doc = json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) throw std::invalid_argument(path + ": not valid JSON");
  return doc;
}

}  // namespace

std::vector<DeviceProfile> stored_devices(std::vector<std::string>* problems) {
  std::vector<DeviceProfile> out = builtin_devices();
  std::error_code ec;
  const fs::path dir(device_dir());
  if (!fs::is_directory(dir, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      DeviceProfile d = device_from_json(read_json_file(f.string()), f.string());
      auto same = std::find_if(out.begin(), out.end(), [&](const DeviceProfile& o) { return normalized(o.name) == normalized(d.name); });
      if (same != out.end()) *same = std::move(d);
      else out.push_back(std::move(d));
    } catch (const std::exception& e) {
      if (problems) problems->push_back(e.what());
    }
  }
  return out;
}

std::string stored_device_names() {
  std::string s;
  for (const auto& d : stored_devices()) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

std::optional<DeviceProfile> find_stored_device(const std::string& name) {
  const std::string want = normalized(name);
  if (want.empty()) return std::nullopt;
  for (auto& d : stored_devices())
    if (normalized(d.name) == want) return d;
  return std::nullopt;
}

DeviceProfile resolve_target_device(const std::string& value) {
  if (auto d = find_stored_device(value)) return *d;
  std::error_code ec;
  if (!value.empty() && fs::is_regular_file(value, ec)) return device_from_json(read_json_file(value), value);
  std::string what;
  std::vector<model::TuneReason> reasons;
  model::say(what, reasons, {.code = model::Reason::kUnknownTargetDevice, .name = value, .detail = stored_device_names()});
  throw TuneArgumentError(what, std::move(reasons));
}

std::string save_device(const DeviceProfile& d) {
  check_device(d, "device " + d.name);
  std::string file;
  for (char c : normalized(d.name)) file += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  if (file.empty()) file = "device";
  const fs::path dir(device_dir());
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path path = dir / (file + ".json");
  const fs::path tmp = dir / (file + ".json.tmp");
  {
    std::ofstream out(tmp);
    out << device_to_json(d).dump(2) << "\n";
    if (!out) throw std::runtime_error(tmp.string() + ": cannot be written (set EDO_DEVICE_DIR to a writable directory)");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(path.string() + ": cannot be written: " + ec.message());
  return path.string();
}

}  // namespace edo::tuner
