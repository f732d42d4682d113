// What the PyTorch hooks noted about a table as part of a language model (issue 33): its LM head
// (metadata "pytorch.lm_head.NAME") and the activation memory its lookups produce per step
// (metadata "pytorch.activation.NAME"); see profiler/python/edo/facts/_family.py for how each figure is
// measured. Read by `edo report` (text and JSON) and the dashboard, so all show the same figures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"

namespace edo::tuner {

// The token table's output twin: an nn.Linear whose weight is the table's rows x dim.
struct LmHead {
  std::string name;       // the head's module name ("lm_head")
  bool tied = false;      // holds the table's own weight: its bytes are the table's
  uint64_t rows = 0, dim = 0;
  std::string dtype;
  uint64_t weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;  // 0 when tied
  std::map<std::string, uint64_t> optimizer_state;                 // "adam.exp_avg" -> bytes
  uint64_t dense_reads_per_step = 0;       // forward calls of the head in its busiest step
  uint64_t dense_read_bytes_per_step = 0;  // each reads every row: x rows x dim x element size
  // What the head adds to memory: weights + gradient + optimizer state (0 when tied).
  uint64_t total_bytes() const;
};

// A table's activations in the step that had the most: its lookups' outputs and their gradient.
struct Activation {
  uint64_t output_bytes = 0, grad_bytes = 0;
  uint64_t peak_bytes = 0;        // output + gradient
  uint64_t calls = 0;             // lookup calls in that step
  std::vector<uint64_t> shape;    // the last output's shape (B x T x D, or bags x D)
  std::string dtype;
};

// The table's facts (by its recorded name, TableView::table_name); nullopt when the hooks noted
// none or the note is malformed (metadata is free-form: never fatal). With several processes,
// the one with the largest figure.
std::optional<LmHead> lm_head_of(const model::Profile& profile, const std::string& table_name);
std::optional<Activation> activation_of(const model::Profile& profile, const std::string& table_name);

// The shape as text: "3 x 5 x 8".
std::string shape_text(const std::vector<uint64_t>& shape);

}  // namespace edo::tuner
