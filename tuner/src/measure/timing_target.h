// Which times a tune's plan is made of (docs/tuning.md "Device model"): measured on this
// machine's backend, or modelled for a GPU that is not here. Never both in one plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/tuner/device_profile.h"
#include "edo/tuner/tuner.h"

namespace edo::tuner {

struct TimingTarget {
  std::optional<DeviceProfile> model;  // set: times modelled for it; unset: measured on the backend
  std::string note;                    // for the plan's notes ("" when there is nothing to say)
  std::vector<model::TuneReason> note_reasons;  // marked in `note` (its line: 0)
};

// The GPU names a recording holds (its sessions' `gpus`, comma-separated), in order, once each.
std::vector<std::string> recorded_gpus(const model::Profile& profile);
// A GPU job: a table lived in device memory or a session names a GPU.
bool is_gpu_recording(const model::Profile& profile);

// --target-device given: modelled for it. Otherwise measured on a CUDA backend; on the CPU
// backend reached by --backend auto, a GPU recording is modelled for its own GPU when a stored
// profile has its name; else measured on the CPU, with a note saying so and how to model a
// stored GPU. A CPU (inference) recording is measured on the CPU. Throws std::invalid_argument
// for a --target-device that names no stored device and no readable profile file.
TimingTarget choose_timing(const model::Profile& profile, const TuneOptions& options, const std::string& backend);

}  // namespace edo::tuner
