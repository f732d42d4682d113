#include "session_identity.h"

#include <SQLiteCpp/Statement.h>

#include <map>

#include "edo/model/recording_fields.h"
#include "record_columns.h"

namespace edo::db {

void save_session_identity(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM session_identity WHERE session_id = :session_id");
  SQLite::Statement put(d, insert_sql(model::kSessionIdentityFields, {"session_id"}));
  for (const auto& s : p.sessions) {
    del.reset();
    del.bind(":session_id", s.id);
    del.exec();
    if (s.identity.empty()) continue;
    put.reset();
    put.bind(":session_id", s.id);
    bind_fields(put, s.identity, model::kSessionIdentityFields, 1);
    put.exec();
  }
}

void load_session_identity(SQLite::Database& d, model::Profile& p) {
  std::map<int64_t, model::Session*> by_id;
  for (auto& s : p.sessions) by_id[s.id] = &s;
  SQLite::Statement q(d, select_sql(model::kSessionIdentityFields, {"session_id"}));
  const FieldReader reader(q, model::kSessionIdentityFields);
  while (q.executeStep()) {
    auto it = by_id.find(q.getColumn("session_id").getInt64());
    if (it != by_id.end()) reader.read(q, it->second->identity);
  }
}

}  // namespace edo::db
