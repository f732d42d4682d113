// The check that a declaration (edo/model/fields.h) and the migrated schema agree.
#include "record_columns.h"

#include <algorithm>

namespace edo::db {

std::map<std::string, std::string> column_types(SQLite::Database& db, const std::string& table) {
  std::map<std::string, std::string> out;
  SQLite::Statement q(db, "SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info(:table)");
  q.bind(":table", table);
  while (q.executeStep()) {
    std::string type = q.getColumn("type").getString();
    if (q.getColumn("notnull").getInt() != 0) type += " NOT NULL";
    if (!q.getColumn("dflt_value").isNull()) type += " DEFAULT " + q.getColumn("dflt_value").getString();
    out[q.getColumn("name").getString()] = type;
  }
  return out;
}

std::vector<std::string> column_differences(SQLite::Database& db, const std::string& table,
                                            const std::map<std::string, std::string>& declared,
                                            const std::vector<const char*>& store_keys) {
  const auto stored = column_types(db, table);
  std::vector<std::string> out;
  for (const auto& [name, type] : declared) {
    auto it = stored.find(name);
    if (it == stored.end()) out.push_back(table + "." + name + ": declared (" + type + ") but not in the database: no migration adds it");
    else if (it->second != type) out.push_back(table + "." + name + ": declared " + type + ", the migrations made " + it->second);
  }
  for (const auto& column : stored) {
    const std::string& name = column.first;
    const bool own = std::any_of(store_keys.begin(), store_keys.end(), [&](const char* k) { return name == k; });
    if (!declared.count(name) && !own) out.push_back(table + "." + name + ": in the database (" + column.second + ") but not declared");
  }
  return out;
}

}  // namespace edo::db
