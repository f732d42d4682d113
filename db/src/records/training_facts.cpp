#include "training_facts.h"

#include <SQLiteCpp/Statement.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "edo/model/recording_fields.h"
#include "record_columns.h"

namespace edo::db {
namespace {

// SQLite stores a NaN as NULL and has no literal for the infinities: a non-finite loss is
// stored as NULL plus its name.
const char* nonfinite_name(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return "";
}

double from_nonfinite(const std::string& name) {
  if (name == "inf") return std::numeric_limits<double>::infinity();
  if (name == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();  // "nan", or a word a later edo may add
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A loss row of a statement that selects kStepLossFields and nonfinite.
model::StepLoss read_loss(const SQLite::Statement& q, const FieldReader<model::StepLoss, 2>& reader) {
  model::StepLoss l;
  reader.read(q, l);
  if (q.getColumn("loss").isNull()) l.loss = from_nonfinite(q.getColumn("nonfinite").getString());
  return l;
}

// The losses a session has in the file that the profile has too: a recording appends to its
// losses between saves, so only the new ones are written. 0 when the stored ones are not a
// prefix of the profile's (then they are all rewritten).
size_t stored_prefix(SQLite::Database& d, const model::Session& s) {
  SQLite::Statement q(d, "SELECT COUNT(*) AS n, MAX(position) AS last FROM session_losses WHERE session_id = :session_id");
  q.bind(":session_id", s.id);
  if (!q.executeStep()) return 0;
  const int64_t n = q.getColumn("n").getInt64();
  if (n == 0 || n > static_cast<int64_t>(s.losses.size()) || q.getColumn("last").getInt64() != n - 1) return 0;
  SQLite::Statement last(d, select_sql(model::kStepLossFields, {"nonfinite"}) +
                                " WHERE session_id = :session_id AND position = :position");
  last.bind(":session_id", s.id);
  last.bind(":position", n - 1);
  if (!last.executeStep()) return 0;
  const model::StepLoss stored = read_loss(last, FieldReader(last, model::kStepLossFields));
  const model::StepLoss& m = s.losses[static_cast<size_t>(n - 1)];
  const bool same = stored.step == m.step && (std::isnan(m.loss) ? std::isnan(stored.loss) : same_bits(stored.loss, m.loss));
  return same ? static_cast<size_t>(n) : 0;
}

void save_losses(SQLite::Database& d, const model::Session& s) {
  const size_t from = stored_prefix(d, s);
  if (from == 0) {
    SQLite::Statement del(d, "DELETE FROM session_losses WHERE session_id = :session_id");
    del.bind(":session_id", s.id);
    del.exec();
  }
  SQLite::Statement put(d, insert_sql(model::kStepLossFields, {"session_id", "position", "nonfinite"}));
  put.bind(":session_id", s.id);
  for (size_t i = from; i < s.losses.size(); ++i) {
    const model::StepLoss& l = s.losses[i];
    put.reset();
    put.bind(":position", static_cast<int64_t>(i));
    put.bind(":nonfinite", nonfinite_name(l.loss));
    bind_fields(put, l, model::kStepLossFields, 3);  // a non-finite loss: NULL
    put.exec();
  }
}

// Each table's optimizer (optimizer_kind NULL: none recorded) and hyperparameters.
void save_table_facts(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement put(d, update_sql(model::kOptimizerParamFields, {"optimizer_kind"}, "id"));
  for (const auto& t : p.tables) {
    put.reset();
    if (t.optimizer_params) put.bind(":optimizer_kind", t.optimizer_params->kind);
    else put.bind(":optimizer_kind");
    bind_fields(put, t.optimizer_params.value_or(model::OptimizerParams{}), model::kOptimizerParamFields, 1);
    put.bind(":id", t.id);
    put.exec();
  }
}

}  // namespace

void save_training_facts(SQLite::Database& d, const model::Profile& p) {
  for (const auto& s : p.sessions) save_losses(d, s);
  save_table_facts(d, p);
}

void load_training_facts(SQLite::Database& d, model::Profile& p) {
  std::map<int64_t, model::Session*> sessions;
  for (auto& s : p.sessions) sessions[s.id] = &s;
  SQLite::Statement q(d, select_sql(model::kStepLossFields, {"session_id", "nonfinite"}) + " ORDER BY session_id, position");
  const FieldReader reader(q, model::kStepLossFields);
  while (q.executeStep()) {
    auto it = sessions.find(q.getColumn("session_id").getInt64());
    if (it != sessions.end()) it->second->losses.push_back(read_loss(q, reader));
  }
  std::map<int64_t, model::Table*> tables;
  for (auto& t : p.tables) tables[t.id] = &t;
  SQLite::Statement t(d, select_sql(model::kOptimizerParamFields, {"id", "optimizer_kind"}));
  const FieldReader params_reader(t, model::kOptimizerParamFields);
  while (t.executeStep()) {
    auto it = tables.find(t.getColumn("id").getInt64());
    if (it == tables.end() || t.getColumn("optimizer_kind").isNull()) continue;
    model::OptimizerParams o;
    o.kind = t.getColumn("optimizer_kind").getString();
    params_reader.read(t, o);
    it->second->optimizer_params = o;
  }
}

}  // namespace edo::db
