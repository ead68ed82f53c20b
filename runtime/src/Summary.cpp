//===- Summary.cpp - short texts about plans and tensors for people -------===//

#include "memfit/runtime/Summary.h"

#include "memfit/runtime/Bytes.h"

#include "Half.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace memfit::rt {

namespace {

double elementAsDouble(const Tensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::f32:
    return t.as<float>()[i];
  case DType::f64:
    return t.as<double>()[i];
  case DType::i64:
    return static_cast<double>(t.as<int64_t>()[i]);
  case DType::i32:
    return t.as<int32_t>()[i];
  case DType::i16:
    return t.as<int16_t>()[i];
  case DType::i8:
    return t.as<int8_t>()[i];
  case DType::u64:
    return static_cast<double>(t.as<uint64_t>()[i]);
  case DType::u32:
    return t.as<uint32_t>()[i];
  case DType::u16:
    return t.as<uint16_t>()[i];
  case DType::u8:
  case DType::i1:
  case DType::u4:
  case DType::u2:
    return t.as<uint8_t>()[i];
  case DType::i4: // sign-extended from the byte's low bits
    return static_cast<int8_t>(t.as<uint8_t>()[i] << 4) >> 4;
  case DType::i2:
    return static_cast<int8_t>(t.as<uint8_t>()[i] << 6) >> 6;
  case DType::f16:
    return halfToFloat(t.as<uint16_t>()[i]);
  case DType::bf16:
    return bf16ToFloat(t.as<uint16_t>()[i]);
  default:
    return NAN; // the 8- and 4-bit floats: see formatTensorSummary
  }
}

/// Two decimals; "nan", "INF", "-INF" for the rest.
std::string fixed(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-INF" : "INF";
  char text[400];
  std::snprintf(text, sizeof(text), "%.2f", v);
  return text;
}

} // namespace

std::string formatPlanSummary(const Manifest &m) {
  std::string s = "memory plan: " + groupDigits(m.totalBytes()) +
                  " bytes in one allocation (weights " +
                  groupDigits(m.weightsBytes) + ", arena peak " +
                  groupDigits(m.arenaBytes) + ")\n";
  s += "  by category (each buffer counted once; arena buffers share "
       "space):\n";
  for (const MemoryCategory &c : m.memory) {
    if (c.name == "weights region" || c.name == "arena peak")
      continue;
    char line[160];
    std::snprintf(line, sizeof(line), "    %-22s %14s bytes\n", c.name.c_str(),
                  groupDigits(c.bytes).c_str());
    s += line;
  }
  return s;
}

std::string formatTensorSummary(const std::string &name, const Tensor &t) {
  switch (t.dtype) {
  case DType::f8e4m3fn:
  case DType::f8e4m3fnuz:
  case DType::f8e5m2:
  case DType::f8e5m2fnuz:
  case DType::f4e2m1:
    // The kernels decode these; the runtime only moves their bytes.
    return "  " + name + ": " + describe(t.dtype, t.shape) +
           "  (not summarized; --output-dir writes it)\n";
  default:
    break;
  }
  int64_t n = t.numElements();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = elementAsDouble(t, i);
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string s = "  " + name + ": " + describe(t.dtype, t.shape);
  if (n > nonFinite)
    s += "  min " + fixed(lo) + " max " + fixed(hi) + " mean " +
         fixed(sum / double(n - nonFinite));
  if (nonFinite)
    s += "  non-finite " + std::to_string(nonFinite);
  s += "\n    [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    s += (i ? ", " : "") + fixed(elementAsDouble(t, i));
  return s + (n > 6 ? ", ...]\n" : "]\n");
}

std::string tensorFileName(const std::string &name) {
  std::string file = name;
  for (char &c : file)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' &&
        c != '.')
      c = '_';
  return file;
}

} // namespace memfit::rt
