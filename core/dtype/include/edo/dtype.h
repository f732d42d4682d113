// Element types of embedding tables: the one vocabulary of the tracer, the wire, the database
// and the kernels.
//
//   name       bytes  code  also read as (older databases, PyTorch, numpy)
//   fp32         4     0    f32, float32, float
//   fp16         2     1    f16, float16, half
//   bf16         2     2    bfloat16
//   int8         1     3    i8
//   uint8        1     4    u8
//   fp8_e4m3     1     5    f8e4m3, float8_e4m3fn, e4m3
//   int32        4     6    i32
//   int64        8     7    i64
//   fp64         8     8    f64, float64, double
//
// Codes 0..5 are edo_dtype's values (profiler/include/edo/edo.h) and what the wire carries;
// 6..8 are only written by tools (edo synth, imports). The storage dtypes of the kernels'
// strategies use the same names (fp32, fp16, bf16 strategies store those dtypes; fp8 stores
// fp8_e4m3 codes; int8/int4 row-wise store uint8 codes with a scale and bias per row).
//
// Standard library only (no allocation, no exceptions): libedo_trace.so includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edo {

enum class DType : std::uint8_t { Fp32 = 0, Fp16 = 1, Bf16 = 2, Int8 = 3, Uint8 = 4, Fp8E4M3 = 5, Int32 = 6, Int64 = 7, Fp64 = 8 };

inline constexpr DType kAllDTypes[] = {DType::Fp32, DType::Fp16,    DType::Bf16,  DType::Int8, DType::Uint8,
                                       DType::Fp8E4M3, DType::Int32, DType::Int64, DType::Fp64};

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Fp32: return "fp32";
    case DType::Fp16: return "fp16";
    case DType::Bf16: return "bf16";
    case DType::Int8: return "int8";
    case DType::Uint8: return "uint8";
    case DType::Fp8E4M3: return "fp8_e4m3";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Fp64: return "fp64";
  }
  return "uint8";
}

constexpr std::uint32_t dtype_bytes(DType t) {
  switch (t) {
    case DType::Fp32:
    case DType::Int32: return 4;
    case DType::Fp16:
    case DType::Bf16: return 2;
    case DType::Int64:
    case DType::Fp64: return 8;
    default: return 1;
  }
}

// The numeric code (edo_dtype / wire value) as a DType; nullopt for an unknown code.
constexpr std::optional<DType> dtype_from_code(unsigned code) {
  if (code <= static_cast<unsigned>(DType::Fp64)) return static_cast<DType>(code);
  return std::nullopt;
}

// Bytes of one element of the numeric code; 1 for an unknown code (what the tracer counts for
// a code it cannot name: the bounds it checks then stay the smallest a table could take).
constexpr std::uint32_t dtype_code_bytes(unsigned code) {
  const std::optional<DType> t = dtype_from_code(code);
  return t ? dtype_bytes(*t) : 1;
}

// A name in any spelling of the table above; nullopt for anything else.
constexpr std::optional<DType> parse_dtype(std::string_view s) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  constexpr Alias aliases[] = {
      {"fp32", DType::Fp32},    {"f32", DType::Fp32},         {"float32", DType::Fp32},  {"float", DType::Fp32},
      {"fp16", DType::Fp16},    {"f16", DType::Fp16},         {"float16", DType::Fp16},  {"half", DType::Fp16},
      {"bf16", DType::Bf16},    {"bfloat16", DType::Bf16},    {"int8", DType::Int8},     {"i8", DType::Int8},
      {"uint8", DType::Uint8},  {"u8", DType::Uint8},         {"fp8_e4m3", DType::Fp8E4M3}, {"f8e4m3", DType::Fp8E4M3},
      {"float8_e4m3fn", DType::Fp8E4M3}, {"e4m3", DType::Fp8E4M3}, {"int32", DType::Int32}, {"i32", DType::Int32},
      {"int64", DType::Int64},  {"i64", DType::Int64},        {"fp64", DType::Fp64},     {"f64", DType::Fp64},
      {"float64", DType::Fp64}, {"double", DType::Fp64},
  };
  for (const Alias& a : aliases)
    if (a.name == s) return a.type;
  return std::nullopt;
}

// The canonical name of any accepted spelling; an unknown name is returned unchanged (a
// reader shows what the file holds rather than inventing a type).
constexpr std::string_view canonical_dtype_name(std::string_view s) {
  const auto t = parse_dtype(s);
  return t ? dtype_name(*t) : s;
}

}  // namespace edo
