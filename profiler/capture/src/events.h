// What the parts report into the current session (events.cpp): GPU memory and kernel
// events, notes, drop counters; and the library's settings as the parts see them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edo/capture/config.h"
#include "edo/drops/catalog.h"
#include "edo/wire/attribution.h"

namespace edo::capture {

// True once the library is configured to record (EDO_CHANNEL or EDO_OUTPUT set).
bool tracer_active();
const Config& tracer_config();
// pid of the current session owner; hooks compare it with getpid() (vfork children).
int64_t session_pid();

void record_memory_event(int64_t bytes, uint64_t address, uint64_t stream, int32_t device,
                         const char* kind);
void record_kernel_launch(const std::string& name, const std::vector<std::string>& tables);
// The same with the tables as n names (allocates nothing for a kernel and tables seen before).
void record_kernel_launch(const std::string& name, const std::string* const* tables, size_t n);
// GPU time of one launch of `name`; `tables`: those that launch read (empty when unknown).
void record_kernel_time(const std::string& name, uint64_t ns, const std::vector<std::string>& tables);
void record_note(const std::string& key, const std::string& value);
// Drop counters: names from the catalog (core/drops/include/edo/drops/catalog.h), checked at
// compile time; a family's member is its prefix + the item.
void count_drop(drops::Name counter, uint64_t n);
void count_family_drop(drops::Family family, std::string_view item, uint64_t n);
// Snapshot of the registered tables' address ranges (for kernel arguments).
std::shared_ptr<const wire::AddressIndex> table_address_index();

}  // namespace edo::capture
