#include "timing_target.h"

#include <algorithm>
#include <cstdio>

namespace edo::tuner {

std::vector<std::string> recorded_gpus(const model::Profile& profile) {
  std::vector<std::string> out;
  for (const auto& s : profile.sessions) {
    size_t start = 0;
    while (start <= s.gpus.size()) {
      size_t end = s.gpus.find(',', start);
      if (end == std::string::npos) end = s.gpus.size();
      std::string name = s.gpus.substr(start, end - start);
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
      if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      start = end + 1;
    }
  }
  return out;
}

bool is_gpu_recording(const model::Profile& profile) {
  for (const auto& t : profile.tables)
    if (t.device.rfind("cuda", 0) == 0) return true;
  return !recorded_gpus(profile).empty();
}

namespace {

std::string figures(const DeviceProfile& d) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "bytes and %g-byte sectors per lookup at %.0f G sectors/s, streamed bytes at %.0f GB/s, on-chip bytes at "
                "%.0f GB/s, misses over the host link at %.0f GB/s (%s), %g us per kernel launch (%s); calibrated by %s",
                d.sector_bytes, d.sectors_per_s() / 1e9, d.memory_gbs, d.onchip_gbs, d.host_link_gbs, d.host_link_basis.c_str(),
                d.launch_us, d.launch_basis.c_str(), d.source.c_str());
  return buf;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

TimingTarget choose_timing(const model::Profile& profile, const TuneOptions& o, const std::string& backend) {
  TimingTarget t;
  if (!o.target_device.empty()) {
    t.model = resolve_target_device(o.target_device);
    t.note = "times modelled for " + t.model->name + " (";
    model::say(t.note, t.note_reasons, {.code = model::Reason::kTargetDeviceGiven});
    t.note += "), not measured: " + figures(*t.model);
    return t;
  }
  if (backend == "cuda" || !is_gpu_recording(profile)) return t;
  const auto gpus = recorded_gpus(profile);
  if (o.backend == "auto") {
    for (const auto& g : gpus) {
      if (auto d = find_stored_device(g)) {
        t.model = *d;
        t.note = "times modelled for " + d->name + " (the recording's GPU; no GPU here), not measured: " + figures(*d);
        return t;
      }
    }
  }
  t.note = "the recording is of a GPU job (" + (gpus.empty() ? std::string("its GPU's name was not recorded") : joined(gpus)) +
           ") and times are measured on this CPU";
  if (o.backend == "cpu") model::say(t.note, t.note_reasons, {.code = model::Reason::kCpuBackendGiven});
  t.note += ", which ranks formats unlike a GPU: ";
  model::say(t.note, t.note_reasons, {.code = model::Reason::kUseTargetDevice, .detail = stored_device_names()});
  return t;
}

}  // namespace edo::tuner
