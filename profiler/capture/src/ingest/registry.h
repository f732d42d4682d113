// The table registry of one process: what edo_table_register() was told, ties between names
// sharing a base pointer, extra bytes per table, and the address index of the tables' memory.
// It belongs to the process, not to a session: a forked child keeps it and sends it again.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "edo/wire/attribution.h"
#include "edo/wire/wire.h"

namespace edo::capture {

struct TableInfo {
  uint32_t id = 0;
  std::string name;
  uint64_t base = 0, rows = 0, bytes = 0;
  uint32_t dim = 0;
  uint8_t dtype = 0, device = 0;
};

// What a session has already sent of the registry (kept by the session, re-created with it).
struct RegistryCursor {
  uint32_t tables = 0;               // tables [0, tables) were sent
  size_t ties = 0;                   // ties [0, ties) were sent
  std::vector<uint64_t> extras;      // per table: extras version last sent
};

class Registry {
 public:
  static constexpr size_t kMaxTables = 1 << 14;

  // `index_addresses`: keep the address index (only an active tracer needs it).
  explicit Registry(bool index_addresses);
  ~Registry();

  // Returns the table id (an existing one for a known name), or a negative edo error code.
  int64_t add(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype, int device);
  int set_extra_bytes(uint32_t id, const char* kind, uint64_t bytes);

  // Lock-free: tables never move or disappear once registered.
  const TableInfo* get(int64_t id) const {
    if (id < 0 || uint64_t(id) >= kMaxTables) return nullptr;
    return slots_[id].load(std::memory_order_acquire);
  }
  uint32_t size() const { return n_.load(std::memory_order_acquire); }

  // Appends the frames a session has not sent yet (tables, extra bytes, ties) and advances
  // its cursor.
  void take_unsent(RegistryCursor& cursor, std::vector<wire::TableReg>& tables,
                   std::vector<wire::ExtraBytes>& extras, std::vector<wire::Tie>& ties);

  // Everything `upto` says was sent, again (tables [0, upto.tables), their extras as they are
  // now, ties [0, upto.ties)): what a new stream needs before the frames that follow it
  // (sink.h: the unsent file after the collector went away).
  void take_sent(const RegistryCursor& upto, std::vector<wire::TableReg>& tables,
                 std::vector<wire::ExtraBytes>& extras, std::vector<wire::Tie>& ties);

  std::shared_ptr<const wire::AddressIndex> address_index() const;
  // Changes whenever address_index() would return another index (lock-free: a launch asks
  // first and keeps the index it has while this is the same).
  uint64_t address_index_version() const { return index_version_.load(std::memory_order_acquire); }

  // Held across fork() so that the child copies a consistent registry.
  std::mutex& mutex() { return mu_; }

 private:
  struct Extras {
    std::map<std::string, uint64_t> bytes;
    uint64_t version = 0;  // bumped on every change
  };
  const bool index_addresses_;
  std::atomic<const TableInfo*> slots_[kMaxTables] = {};
  std::atomic<uint32_t> n_{0};
  mutable std::mutex mu_;
  std::vector<Extras> extras_;                          // mu_, by table id
  std::vector<std::pair<uint32_t, uint32_t>> ties_;     // mu_
  std::shared_ptr<const wire::AddressIndex> index_;     // mu_ (copied out under it)
  std::atomic<uint64_t> index_version_{1};              // bumped after index_ changes
};

}  // namespace edo::capture
