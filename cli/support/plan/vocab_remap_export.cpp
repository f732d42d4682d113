#include "support/plan/vocab_remap_export.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "command.h"
#include "edo/db/profile_store.h"
#include "edo/db/table_samples.h"
#include "edo/model/profile_summary.h"
#include "edo/tuner/vocab_coverage.h"
#include "support/terminal.h"

namespace edo::cli {

namespace {

uint32_t coverage_bp(const std::string& c) {
  if (c == "99") return 9900;
  if (c == "99.9") return 9990;
  if (c == "99.99") return 9999;
  throw UsageError("--coverage " + terminal_safe(c) + ": give 99, 99.9 or 99.99 (percent of the lookups the kept ids cover)");
}

}  // namespace

std::string vocab_remap_text(const VocabRemapRequest& r) {
  const uint32_t bp = coverage_bp(r.coverage);
  if (!std::filesystem::exists(r.file)) throw Failure(terminal_safe(r.file) + ": no such file; give the .edodb that 'edo record' wrote");
  db::ProfileStore store(r.file, db::ProfileStore::Mode::kReadOnly);
  model::Profile profile = store.load_for_viewing();
  std::vector<std::string> token_tables;
  for (const auto& t : profile.tables)
    if (tuner::is_token_table(profile, t.name) &&
        std::find(token_tables.begin(), token_tables.end(), t.name) == token_tables.end())
      token_tables.push_back(t.name);
  std::string name = r.table;
  if (name.empty()) {
    if (token_tables.size() != 1) {
      std::string list;
      for (const auto& n : token_tables) list += (list.empty() ? "" : ", ") + terminal_safe(n);
      throw UsageError(token_tables.empty()
                           ? "the recording has no token table (a table the PyTorch hooks saw an LM head for): name one with --table"
                           : "the recording has several token tables (" + list + "): name one with --table");
    }
    name = token_tables.front();
  }
  db::load_ordered_samples(store, profile, [&](const model::Table& t) { return t.name == name; });
  const auto views = model::table_views(profile);
  const model::TableView* view = nullptr;
  for (const auto& v : views)
    if (v.table_name == name) view = &v;
  if (!view) throw Failure("no table '" + terminal_safe(name) + "' in " + terminal_safe(r.file) + "; 'edo report' lists the tables");
  if (r.unk && *r.unk >= view->rows)
    throw UsageError("--unk " + std::to_string(*r.unk) + " is not a row of '" + terminal_safe(name) + "' (0.." +
                     std::to_string(view->rows - 1) + "): give the old id of the tokenizer's UNK token");
  std::string why;
  const auto cov = tuner::vocab_coverage(view->aggregate, view->rows, why);
  const auto remap = cov ? tuner::vocab_trim_remap(view->aggregate, view->rows, bp, r.unk, why) : std::nullopt;
  if (!remap) throw Failure("table '" + terminal_safe(name) + "': no remap: " + why);
  const tuner::VocabRemap& m = *remap;
  const tuner::VocabTarget* target = nullptr;
  for (const auto& x : cov->targets)
    if (x.target_bp == bp) target = &x;
  nlohmann::ordered_json j;
  j["format"] = kVocabRemapFormat;
  j["table"] = name;
  j["rows"] = view->rows;
  j["coverage_target"] = bp / 10000.0;
  j["fit_fraction"] = 0.7;
  j["held_out_lookups"] = cov->held_out_lookups;
  j["held_out_coverage"] = target->held_out_coverage;
  j["held_out_lost_lookups"] = target->held_out_missed;
  j["kept_rows"] = m.kept.size();
  j["unk"] = {{"old_id", m.unk_old}, {"new_id", m.unk_new}, {"added", m.unk_added}};
  j["kept_old_ids"] = m.kept;
  j["new_id_of_old"] = m.new_of;
  // One line: a 128K-row vocabulary is two lists of 128K numbers.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

bool is_vocab_remap_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(200, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.rfind(std::string("{\"format\":\"") + kVocabRemapFormat + "\"", 0) == 0;
}

}  // namespace edo::cli
