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

namespace {

/// The op a kernel computes, from its name: "k58_layer_norm" -> "layer_norm".
std::string opOfKernel(const std::string &name) {
  size_t i = 0;
  if (!name.empty() && name[0] == 'k') {
    i = 1;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])))
      ++i;
    if (i > 1 && i < name.size() && name[i] == '_')
      return name.substr(i + 1);
  }
  return name;
}

struct Bucket {
  std::string label;
  size_t steps = 0;
  double seconds = 0;
};

/// The buckets' lines, largest first, at most `top` (0: all).
std::string bucketLines(std::vector<Bucket> buckets, double total,
                        size_t top) {
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const Bucket &a, const Bucket &b) {
                     return a.seconds > b.seconds;
                   });
  std::string s;
  size_t shown = 0;
  for (const Bucket &b : buckets) {
    if (top && shown++ == top)
      break;
    char line[160];
    std::snprintf(line, sizeof(line), "    %-30s %5zu steps %10.2f ms %6.1f%%\n",
                  b.label.c_str(), b.steps, b.seconds * 1e3,
                  total > 0 ? 100.0 * b.seconds / total : 0.0);
    s += line;
  }
  return s;
}

} // namespace

std::string formatStepProfile(const Manifest &manifest,
                              const std::vector<StepTime> &times, size_t top) {
  std::string s;
  for (size_t e = 0; e < manifest.entries.size(); ++e) {
    std::vector<Bucket> kinds(5), ops;
    kinds[0].label = "contractions";
    kinds[1].label = "element-wise kernels";
    kinds[2].label = "row kernels";
    kinds[3].label = "kernels run as fibers";
    kinds[4].label = "collectives";
    uint64_t runs = 0;
    double total = 0;
    for (const StepTime &t : times) {
      if (t.entry != e || t.calls == 0)
        continue;
      runs = t.calls;
      double perRun = t.seconds / double(t.calls);
      total += perRun;
      Bucket &kind = kinds[t.contraction   ? 0
                           : t.collective  ? 4
                           : !t.barriers   ? 1
                           : t.threadLoops ? 2
                                           : 3];
      ++kind.steps;
      kind.seconds += perRun;
      std::string op = t.contraction  ? "contraction"
                       : t.collective ? "collective"
                                      : opOfKernel(t.name);
      auto it = std::find_if(ops.begin(), ops.end(),
                             [&](const Bucket &b) { return b.label == op; });
      if (it == ops.end()) {
        ops.push_back({op, 0, 0});
        it = ops.end() - 1;
      }
      ++it->steps;
      it->seconds += perRun;
    }
    if (!runs)
      continue;
    char head[200];
    std::snprintf(head, sizeof(head),
                  "profile of entry '%s': %llu run%s, %.2f ms a run (each step "
                  "timed alone)\n",
                  manifest.entries[e].name.c_str(),
                  static_cast<unsigned long long>(runs), runs == 1 ? "" : "s",
                  total * 1e3);
    s += head;
    // Kinds with no steps (no fibers, mostly) are left out.
    kinds.erase(std::remove_if(kinds.begin(), kinds.end(),
                               [](const Bucket &b) { return b.steps == 0; }),
                kinds.end());
    s += "  by kind:\n" + bucketLines(kinds, total, 0);
    s += "  by op";
    if (top && ops.size() > top)
      s += " (the " + std::to_string(top) + " largest of " +
           std::to_string(ops.size()) + ")";
    s += ":\n" + bucketLines(ops, total, top);
  }
  return s;
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
