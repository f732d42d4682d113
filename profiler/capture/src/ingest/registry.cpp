#include "registry.h"

#include "edo/dtype.h"
#include "edo/edo.h"

namespace edo::capture {
namespace {

// edo_dtype codes are edo::DType codes (the one vocabulary in core's edo/dtype.h).
static_assert(int(EDO_F32) == int(DType::Fp32) && int(EDO_F16) == int(DType::Fp16) && int(EDO_BF16) == int(DType::Bf16) &&
                  int(EDO_I8) == int(DType::Int8) && int(EDO_U8) == int(DType::Uint8) && int(EDO_F8E4M3) == int(DType::Fp8E4M3),
              "edo_dtype (edo.h) and edo::DType (edo/dtype.h) must keep the same codes");

}  // namespace

Registry::Registry(bool index_addresses)
    : index_addresses_(index_addresses), index_(std::make_shared<const wire::AddressIndex>()) {}

Registry::~Registry() {
  for (auto& s : slots_) delete s.load();
}

int64_t Registry::add(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype,
                      int device) {
  if (!name || !*name || rows == 0 || dim == 0 || dtype < EDO_F32 || dtype > EDO_F8E4M3 ||
      device < EDO_HOST || device > EDO_CUDA)
    return EDO_ERR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lk(mu_);
  const uint32_t n = n_.load();
  int64_t tie_with = -1;
  for (uint32_t i = 0; i < n; ++i) {
    const TableInfo* t = slots_[i].load();
    if (t->name == name) {
      if (t->rows != rows || t->dim != dim || t->dtype != dtype) return EDO_ERR_SHAPE_MISMATCH;
      return t->id;
    }
    if (base && t->base == reinterpret_cast<uint64_t>(base) && tie_with < 0) tie_with = t->id;
  }
  if (n >= kMaxTables) return EDO_ERR_NO_MEMORY;
  auto* t = new TableInfo();
  t->id = n;
  t->name = name;
  t->base = reinterpret_cast<uint64_t>(base);
  t->rows = rows;
  t->dim = dim;
  t->dtype = uint8_t(dtype);
  t->device = uint8_t(device);
  t->bytes = rows * dim * dtype_code_bytes(static_cast<unsigned>(dtype));
  if (index_addresses_) {
    // A new immutable index: threads that hold the old one keep reading it undisturbed.
    wire::AddressIndex::Builder b(*index_);
    b.add(t->base, t->bytes, t->name);
    index_ = std::make_shared<const wire::AddressIndex>(std::move(b).build());
    index_version_.fetch_add(1, std::memory_order_release);
  }
  extras_.emplace_back();
  slots_[n].store(t, std::memory_order_release);
  n_.store(n + 1, std::memory_order_release);
  if (tie_with >= 0) ties_.emplace_back(uint32_t(tie_with), t->id);
  return t->id;
}

int Registry::set_extra_bytes(uint32_t id, const char* kind, uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  if (id >= extras_.size()) return EDO_ERR_BAD_HANDLE;
  Extras& e = extras_[id];
  e.bytes[kind] = bytes;
  ++e.version;
  return EDO_OK;
}

void Registry::take_unsent(RegistryCursor& c, std::vector<wire::TableReg>& tables,
                           std::vector<wire::ExtraBytes>& extras, std::vector<wire::Tie>& ties) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint32_t n = n_.load();
  for (; c.tables < n; ++c.tables) {
    const TableInfo* t = slots_[c.tables].load();
    wire::TableReg r;
    r.id = t->id;
    r.name = t->name;
    r.base = t->base;
    r.rows = t->rows;
    r.dim = t->dim;
    r.dtype = t->dtype;
    r.device = t->device;
    r.device_index = t->device == EDO_CUDA ? 0 : -1;
    tables.push_back(std::move(r));
  }
  if (c.extras.size() < extras_.size()) c.extras.resize(extras_.size(), 0);
  for (uint32_t id = 0; id < extras_.size(); ++id) {
    const Extras& e = extras_[id];
    if (e.version == c.extras[id]) continue;
    for (const auto& [kind, bytes] : e.bytes) extras.push_back({id, kind, bytes});
    c.extras[id] = e.version;
  }
  for (; c.ties < ties_.size(); ++c.ties) ties.push_back({ties_[c.ties].first, ties_[c.ties].second});
}

void Registry::take_sent(const RegistryCursor& upto, std::vector<wire::TableReg>& tables,
                         std::vector<wire::ExtraBytes>& extras, std::vector<wire::Tie>& ties) {
  RegistryCursor all;
  std::vector<wire::TableReg> t;
  std::vector<wire::ExtraBytes> e;
  std::vector<wire::Tie> ti;
  take_unsent(all, t, e, ti);
  for (auto& r : t)
    if (r.id < upto.tables) tables.push_back(std::move(r));
  for (auto& x : e)
    if (x.table < upto.tables) extras.push_back(std::move(x));
  for (size_t i = 0; i < ti.size() && i < upto.ties; ++i) ties.push_back(std::move(ti[i]));
}

std::shared_ptr<const wire::AddressIndex> Registry::address_index() const {
  std::lock_guard<std::mutex> lk(mu_);
  return index_;
}

}  // namespace edo::capture
