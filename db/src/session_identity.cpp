#include "session_identity.h"

#include <SQLiteCpp/Statement.h>

#include <map>

namespace edo::db {
namespace {

void bind_optional_int(SQLite::Statement& st, int i, const std::optional<int64_t>& v) {
  if (v) st.bind(i, *v);
  else st.bind(i);
}

std::optional<int64_t> opt_of(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt64();
}

}  // namespace

void save_session_identity(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM session_identity WHERE session_id = ?");
  SQLite::Statement put(d,
      "INSERT INTO session_identity(session_id, job_id, master, world_size, group_rank, local_world_size, clock_shift_ns)"
      " VALUES (?,?,?,?,?,?,?)");
  for (const auto& s : p.sessions) {
    del.reset();
    del.bind(1, s.id);
    del.exec();
    if (s.identity.empty()) continue;
    put.reset();
    put.clearBindings();
    put.bind(1, s.id);
    put.bind(2, s.identity.job_id);
    put.bind(3, s.identity.master);
    bind_optional_int(put, 4, s.identity.world_size);
    bind_optional_int(put, 5, s.identity.group_rank);
    bind_optional_int(put, 6, s.identity.local_world_size);
    put.bind(7, s.identity.clock_shift_ns);
    put.exec();
  }
}

void load_session_identity(SQLite::Database& d, model::Profile& p) {
  std::map<int64_t, model::Session*> by_id;
  for (auto& s : p.sessions) by_id[s.id] = &s;
  SQLite::Statement q(d,
      "SELECT session_id, job_id, master, world_size, group_rank, local_world_size, clock_shift_ns FROM session_identity");
  while (q.executeStep()) {
    auto it = by_id.find(q.getColumn(0).getInt64());
    if (it == by_id.end()) continue;
    model::RankIdentity& id = it->second->identity;
    id.job_id = q.getColumn(1).getString();
    id.master = q.getColumn(2).getString();
    id.world_size = opt_of(q.getColumn(3));
    id.group_rank = opt_of(q.getColumn(4));
    id.local_world_size = opt_of(q.getColumn(5));
    id.clock_shift_ns = q.getColumn(6).getInt64();
  }
}

}  // namespace edo::db
