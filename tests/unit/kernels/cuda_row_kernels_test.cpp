// The CUDA backend's lookup kernels of the row formats (kernels/cuda/row_chunks.h) on the CPU:
// a fake launch runs every thread of the grid the launcher would start, one after the other,
// with the launcher's own choice of path and lanes per bag. What differs on a GPU is only the
// primitives at the top of row_chunks.h (a 128-bit load, __byte_perm, the fp16/fp8 conversion
// instructions), which tests/gpu/kernels checks against the formats' decodes on a device.
//
// Checked here: the chunk decoders (the int8/int4 codes through the mantissa of 2^23, int4's
// nibble order, fp8's scale folded into the weight, the per-row parameters' offsets), the lane
// and chunk indexing for every lanes-per-bag count, the 4-rows-in-flight loop and its tail,
// empty bags, mean pooling, per-sample weights and the out-of-range flag: gathers bit for bit
// equal to the table's decode, bags within the fp64 reference's float32 bound (in order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "cuda/row_chunks.h"

using namespace edo::kernels;
using namespace edo::kernels::test;
using edo::kernels::cuda::detail::BagArgs;
using edo::kernels::cuda::detail::ErrFlag;

namespace {

namespace cd = edo::kernels::cuda::detail;

std::int64_t grid_threads(std::int64_t items) { return (items + cd::kRowBlock - 1) / cd::kRowBlock * cd::kRowBlock; }

template <RowKind K, int G>
void run_vec(const RowView& v, const BagArgs& a) {
  for (std::int64_t t = 0; t < grid_threads(a.n_bags * G); ++t) cd::row_bag_vec_thread<K, G>(v, a, t);
}

// The launch RowTableImpl::launch_kind makes, thread by thread; returns the path it took
// ("vec/G" or "scalar").
template <RowKind K>
std::string fake_launch_kind(const RowView& v, const BagArgs& a) {
  if (!cd::row_vec_path<K>(v.row_bytes, v.dim)) {
    for (std::int64_t t = 0; t < grid_threads(a.n_bags * 32); ++t) cd::row_bag_scalar_thread<K>(v, a, t);
    return "scalar";
  }
  const int g = cd::row_vec_lanes<K>(v.dim);
  switch (g) {
    case 1: run_vec<K, 1>(v, a); break;
    case 2: run_vec<K, 2>(v, a); break;
    case 4: run_vec<K, 4>(v, a); break;
    case 8: run_vec<K, 8>(v, a); break;
    case 16: run_vec<K, 16>(v, a); break;
    default: run_vec<K, 32>(v, a); break;
  }
  return "vec/" + std::to_string(g);
}

std::string fake_launch(RowKind k, const RowView& v, const BagArgs& a) {
  switch (k) {
    case RowKind::F32: return fake_launch_kind<RowKind::F32>(v, a);
    case RowKind::F16: return fake_launch_kind<RowKind::F16>(v, a);
    case RowKind::BF16: return fake_launch_kind<RowKind::BF16>(v, a);
    case RowKind::FP8: return fake_launch_kind<RowKind::FP8>(v, a);
    case RowKind::INT8: return fake_launch_kind<RowKind::INT8>(v, a);
    case RowKind::INT4: return fake_launch_kind<RowKind::INT4>(v, a);
  }
  return "";
}

// A row table as RowTableImpl uploads it (the host copy stands in for the device copy).
struct FakeRowTable {
  RowKind kind;
  RowView view;
  std::uint64_t rows;
  ErrFlag err{};
  explicit FakeRowTable(const EncodedTable& t) : rows(t.rows()) {
    const FormatData f = t.format_data();
    kind = static_cast<RowKind>(static_cast<int>(f.kind));  // FormatKind's first six match RowKind
    view = RowView{static_cast<const std::uint8_t*>(f.array("rows").data), f.row_bytes, t.dim(), static_cast<float>(f.scalar("table_scale"))};
  }
  // Runs a lookup into a NaN-poisoned output; returns the path.
  std::string lookup(const std::vector<std::int64_t>& idx, const std::vector<std::int64_t>* offsets, const float* psw, Pooling mode,
                     std::vector<float>& out) {
    const std::int64_t n_bags = offsets ? static_cast<std::int64_t>(offsets->size()) - 1 : static_cast<std::int64_t>(idx.size());
    out.assign(static_cast<std::size_t>(n_bags) * view.dim, std::numeric_limits<float>::quiet_NaN());
    const BagArgs a{idx.data(), offsets ? offsets->data() : nullptr, n_bags, psw, mode == Pooling::Mean ? 1 : 0, out.data(), view.dim, rows, &err};
    return fake_launch(kind, view, a);
  }
};

struct Inputs {
  std::vector<std::int64_t> idx, offsets;
  std::vector<float> psw;
};

// 61 bags: empty ones (every 11th), lengths 1..39 (every tail of the 4-row loop), and one of
// 700 rows.
Inputs make_inputs(std::uint64_t rows, std::uint64_t seed) {
  Inputs in;
  Rng rng(seed);
  in.offsets.push_back(0);
  for (int b = 0; b < 61; ++b) {
    const std::uint64_t len = b % 11 == 0 ? 0 : (b == 17 ? 700 : 1 + rng.below(39));
    for (std::uint64_t i = 0; i < len; ++i) in.idx.push_back(static_cast<std::int64_t>(rng.below(rows)));
    in.offsets.push_back(static_cast<std::int64_t>(in.idx.size()));
  }
  for (std::size_t i = 0; i < in.idx.size(); ++i) in.psw.push_back(static_cast<float>(rng.uniform() * 2 - 1));
  return in;
}

void expect_within(const std::vector<float>& got, const RefBag& ref, const std::string& what) {
  ASSERT_EQ(got.size(), ref.value.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": element " << i << " not written";
    ASSERT_NEAR(got[i], ref.value[i], ref.tol[i]) << what << ": element " << i;
  }
}

}  // namespace

// 0x4B0000qq is 2^23 + q: the byte permute's selector puts byte k of the word in the mantissa.
TEST(CudaRowKernels, CodesThroughTheMantissaOf2p23) {
  for (std::uint32_t q = 0; q < 256; ++q) {
    for (std::uint32_t k = 0; k < 4; ++k) {
      const std::uint32_t word = 0xA5C3E10Fu ^ (0x01010101u * ((q * 7 + k) & 0xffu));  // other bytes vary
      const std::uint32_t w = (word & ~(0xffu << (8 * k))) | (q << (8 * k));
      EXPECT_EQ(cd::byte_perm(w, 0x4B000000u, 0x7540u + k), 0x4B000000u | q);
      EXPECT_EQ(cd::byte_plus_2p23(w, k) - cd::k2p23, static_cast<float>(q));
    }
  }
}

// Every row format through every path the launcher picks: gathers equal the decode bit for bit,
// bags (sum and mean, with and without per-sample weights) within the fp64 bound.
TEST(CudaRowKernels, FakeLaunchMatchesTheDecodeAndTheFp64Bound) {
  const char* specs[] = {"fp32", "fp16", "bf16", "fp8", "fp8:scale=table", "int8", "int4"};
  // dims reaching 1, 2, 4, 8, 16 and 32 lanes per bag, several chunks per lane, partial sub-warps
  // (chunks not a power of two) and the scalar path
  const std::uint32_t dims[] = {6, 16, 24, 32, 40, 48, 64, 96, 128, 1024};
  std::map<std::string, std::set<std::string>> paths;
  for (const char* spec : specs) {
    for (std::uint32_t D : dims) {
      SCOPED_TRACE(std::string(spec) + " dim " + std::to_string(D));
      const std::uint64_t R = D >= 1024 ? 300 : 1000 + D;
      const auto w = weights(R, D, 200 + D);
      auto t = enc(spec, w, R, D);
      FakeRowTable ft(*t);
      const auto dec = decode_all(*t);
      const Inputs in = make_inputs(R, D * 13 + 5);
      std::vector<float> out;
      paths[spec].insert(ft.lookup(in.idx, nullptr, nullptr, Pooling::Sum, out));
      for (std::size_t i = 0; i < in.idx.size(); ++i)
        for (std::uint32_t d = 0; d < D; ++d)
          ASSERT_EQ(out[i * D + d], dec[static_cast<std::size_t>(in.idx[i]) * D + d]) << "gather " << i << " col " << d;
      for (Pooling mode : {Pooling::Sum, Pooling::Mean}) {
        for (bool weighted : {false, true}) {
          const float* psw = weighted ? in.psw.data() : nullptr;
          ft.lookup(in.idx, &in.offsets, psw, mode, out);
          expect_within(out, reference_bag(*t, dec, in.idx, in.offsets, psw, mode, Order::InOrder),
                        std::string("bag ") + (mode == Pooling::Mean ? "mean" : "sum") + (weighted ? " weighted" : ""));
        }
      }
      EXPECT_EQ(ft.err.set, 0u);
    }
  }
  // Every path was taken: the scalar one and 1..32 lanes per bag, for every format.
  const std::set<std::string> expect_int4 = {"scalar", "vec/1", "vec/2", "vec/4", "vec/32"};
  EXPECT_EQ(paths["int4"], expect_int4);
  const std::set<std::string> expect_fp32 = {"scalar", "vec/4", "vec/8", "vec/16", "vec/32"};
  EXPECT_EQ(paths["fp32"], expect_fp32);
  const std::set<std::string> expect_int8 = {"scalar", "vec/1", "vec/2", "vec/4", "vec/8", "vec/32"};
  EXPECT_EQ(paths["int8"], expect_int8);
}

// An index outside the table: the flag names the first one (index and position), its row reads
// as zeros, the other rows of the bag still count.
TEST(CudaRowKernels, OutOfRangeIndexSetsTheFlagAndReadsZeros) {
  for (const char* spec : {"fp32", "int8", "int4", "fp8"}) {
    for (std::uint32_t D : {128u, 40u}) {
      SCOPED_TRACE(std::string(spec) + " dim " + std::to_string(D));
      const std::uint64_t R = 100;
      const auto w = weights(R, D, 9);
      auto t = enc(spec, w, R, D);
      FakeRowTable ft(*t);
      const auto dec = decode_all(*t);
      std::vector<std::int64_t> idx = {3, 5, 7, 100, 9, -1, 11}, off = {0, 7};
      std::vector<float> out;
      ft.lookup(idx, &off, nullptr, Pooling::Sum, out);
      EXPECT_EQ(ft.err.set, 1u);
      EXPECT_EQ(ft.err.index, 100);
      EXPECT_EQ(ft.err.position, 3);
      const std::vector<std::int64_t> good = {3, 5, 7, 9, 11}, good_off = {0, 5};
      const RefBag ref = reference_bag(*t, dec, good, good_off, nullptr, Pooling::Sum, Order::InOrder);
      // the bad rows add exact zeros, so the bound of the good rows holds
      expect_within(out, ref, "bag without the bad rows");
    }
  }
}
