// The CPU backend's training step (edo/kernels/training.h): Backend::load_training on "cpu".
#pragma once

#include <memory>

#include "edo/kernels/backend.h"
#include "edo/kernels/training.h"

namespace edo::kernels::cpu {

// nullptr when the table's format has no update on the CPU (only fp32, fp16 and bf16 rows
// are trained in place: EncodedTable::has_backward()).
std::unique_ptr<TrainingTable> load_cpu_training(EncodedTable& table, const Workload& work, const TrainingSpec& spec);

}  // namespace edo::kernels::cpu
