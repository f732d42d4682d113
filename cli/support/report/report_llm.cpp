#include "support/report/report_llm.h"

#include <fmt/format.h>

#include <algorithm>

#include "edo/tuner/llm_facts.h"
#include "support/report/report_vocab.h"
#include "support/terminal.h"
#include "support/text_width.h"

namespace edo::cli {

using json = nlohmann::ordered_json;

namespace {

// The token table whose head is `t` (a tied head registered under its own name), or "".
std::string llm_head_owner(const model::Profile& profile, const model::TableView& t) {
  if (t.shares_weights_of.empty()) return "";
  const auto h = tuner::lm_head_of(profile, t.shares_weights_of);
  return h && h->tied && h->name == t.table_name ? t.shares_weights_of : "";
}

std::string llm_head_label(const tuner::LmHead& h) { return terminal_safe(h.name) + (h.tied ? " (tied)" : " (untied)"); }

}  // namespace

void add_llm_json(const model::Profile& profile, const model::TableView& t, json& j) {
  if (const auto a = tuner::activation_of(profile, t.table_name)) {
    j["activation"] = {{"output_bytes", a->output_bytes}, {"grad_bytes", a->grad_bytes}, {"peak_bytes", a->peak_bytes},
                       {"calls", a->calls},           {"shape", a->shape},           {"dtype", a->dtype}};
  } else {
    j["activation"] = nullptr;
  }
  if (const auto h = tuner::lm_head_of(profile, t.table_name)) {
    j["lm_head"] = {{"name", h->name},
                    {"tied", h->tied},
                    {"rows", h->rows},
                    {"dim", h->dim},
                    {"dtype", h->dtype},
                    {"weight_bytes", h->weight_bytes},
                    {"grad_bytes", h->grad_bytes},
                    {"optimizer_bytes", h->optimizer_bytes},
                    {"optimizer_state", h->optimizer_state},
                    {"total_bytes", h->total_bytes()},
                    {"dense_reads_per_step", h->dense_reads_per_step},
                    {"dense_read_bytes_per_step", h->dense_read_bytes_per_step}};
  } else {
    j["lm_head"] = nullptr;
  }
  const std::string owner = llm_head_owner(profile, t);
  j["lm_head_of"] = owner.empty() ? json(nullptr) : json(owner);
  j["vocab"] = vocab_json(profile, t);  // token tables' coverage and trim (support/report/report_vocab.h)
}

uint64_t lm_head_bytes(const model::Profile& profile, const std::vector<model::TableView>& tables) {
  uint64_t n = 0;
  for (const auto& t : tables)
    if (const auto h = tuner::lm_head_of(profile, t.table_name)) n += h->total_bytes();
  return n;
}

uint64_t activation_peak_bytes(const model::Profile& profile, const std::vector<model::TableView>& tables) {
  uint64_t n = 0;
  for (const auto& t : tables)
    if (const auto a = tuner::activation_of(profile, t.table_name)) n += a->peak_bytes;
  return n;
}

LlmText llm_text(const model::Profile& profile, const std::vector<model::TableView>& tables) {
  struct Row {
    std::string name, out, grad, peak, shape, head, head_bytes, reads;
  };
  std::vector<Row> rows;
  std::vector<std::string> details;
  for (const auto& t : tables) {
    const auto a = tuner::activation_of(profile, t.table_name);
    const auto h = tuner::lm_head_of(profile, t.table_name);
    if (!a && !h) continue;
    Row r{terminal_safe(t.name), "-", "-", "-", "-", "-", "-", "-"};
    if (a) {
      r.out = model::format_bytes(a->output_bytes);
      r.grad = model::format_bytes(a->grad_bytes);
      r.peak = model::format_bytes(a->peak_bytes);
      r.shape = tuner::shape_text(a->shape) + " " + terminal_safe(a->dtype);
    }
    if (h) {
      r.head = llm_head_label(*h);
      r.head_bytes = h->tied ? "shared" : model::format_bytes(h->total_bytes());
      r.reads = fmt::format("{} ({})", h->dense_reads_per_step, model::format_bytes(h->dense_read_bytes_per_step));
      std::string line = fmt::format("  {}: LM head {}, {} x {} {}", r.name, r.head, h->rows, h->dim, terminal_safe(h->dtype));
      if (h->tied) {
        line += ": the table's own weights, gradient and optimizer state";
      } else {
        line += fmt::format(": weights {}, gradient {}, optimizer state {}", model::format_bytes(h->weight_bytes),
                            model::format_bytes(h->grad_bytes), model::format_bytes(h->optimizer_bytes));
        std::string parts;
        for (const auto& [k, v] : h->optimizer_state) parts += (parts.empty() ? "" : ", ") + terminal_safe(k) + " " + model::format_bytes(v);
        if (!parts.empty()) line += " (" + parts + ")";
      }
      line += fmt::format("; reads every row {} per step ({})",
                          h->dense_reads_per_step == 1 ? std::string("once") : fmt::format("{} times", h->dense_reads_per_step),
                          model::format_bytes(h->dense_read_bytes_per_step));
      details.push_back(line);
      if (!h->tied)
        details.push_back(fmt::format("  {} + {}: {} (the table's {} and the head's {})", r.name, terminal_safe(h->name),
                                      model::format_bytes(t.total_bytes() + h->total_bytes()), model::format_bytes(t.total_bytes()),
                                      model::format_bytes(h->total_bytes())));
    }
    rows.push_back(std::move(r));
  }
  LlmText out;
  if (rows.empty()) return out;
  size_t w_name = 5, w_shape = 12, w_head = 7;
  for (const auto& r : rows) {
    w_name = std::min<size_t>(std::max(w_name, display_width(r.name)), 40);
    w_shape = std::max(w_shape, display_width(r.shape));
    w_head = std::max(w_head, display_width(r.head));
  }
  out.table.push_back(fmt::format("{} {:>10} {:>10} {:>10}  {}  {} {:>10}  {}", pad_right("TABLE", w_name), "ACTIVATION",
                                  "ACT GRAD", "ACT PEAK", pad_right("OUTPUT SHAPE", w_shape), pad_right("LM HEAD", w_head),
                                  "HEAD BYTES", "READS/STEP"));
  for (const auto& r : rows)
    out.table.push_back(fmt::format("{} {:>10} {:>10} {:>10}  {}  {} {:>10}  {}", pad_right(r.name, w_name), r.out, r.grad, r.peak,
                                    pad_right(r.shape, w_shape), pad_right(r.head, w_head), r.head_bytes, r.reads));
  out.notes = std::move(details);
  for (auto& l : vocab_text(profile, tables)) out.notes.push_back(std::move(l));  // support/report/report_vocab.h
  out.notes.push_back("ACTIVATION: the outputs of the table's lookups in the step with the most (B x T x D, or bags x D), "
                      "ACT GRAD their gradient, ACT PEAK both; READS/STEP: the head's forward calls per step, each reading "
                      "every row.");
  return out;
}

}  // namespace edo::cli
