//===- Manifest.cpp - dtypes, manifest validation and executables on disk -===//
//
// The manifest's JSON form is in ManifestJson.cpp.
//
//===----------------------------------------------------------------------===//

#include "memfit/runtime/Manifest.h"

#include "Files.h"
#include "Hash.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>

namespace memfit::rt {

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

const DType kAllDTypes[22] = {
    DType::f32,        DType::f64,      DType::f16,        DType::bf16,
    DType::i64,        DType::i32,      DType::i16,        DType::i8,
    DType::u64,        DType::u32,      DType::u16,        DType::u8,
    DType::i1,         DType::f8e4m3fn, DType::f8e4m3fnuz, DType::f8e5m2,
    DType::f8e5m2fnuz, DType::f4e2m1,   DType::i4,         DType::u4,
    DType::i2,         DType::u2};

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::f64:
  case DType::i64:
  case DType::u64:
    return 8;
  case DType::f32:
  case DType::i32:
  case DType::u32:
    return 4;
  case DType::f16:
  case DType::bf16:
  case DType::i16:
  case DType::u16:
    return 2;
  default:
    return 1;
  }
}

bool dtypeIsOpaqueToNumpy(DType type) {
  switch (type) {
  case DType::bf16:
  case DType::f8e4m3fn:
  case DType::f8e4m3fnuz:
  case DType::f8e5m2:
  case DType::f8e5m2fnuz:
  case DType::f4e2m1:
  case DType::i4:
  case DType::u4:
  case DType::i2:
  case DType::u2:
    return true;
  default:
    return false;
  }
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::f32:
    return "f32";
  case DType::f64:
    return "f64";
  case DType::f16:
    return "f16";
  case DType::bf16:
    return "bf16";
  case DType::i64:
    return "i64";
  case DType::i32:
    return "i32";
  case DType::i16:
    return "i16";
  case DType::i8:
    return "i8";
  case DType::u64:
    return "u64";
  case DType::u32:
    return "u32";
  case DType::u16:
    return "u16";
  case DType::u8:
    return "u8";
  case DType::i1:
    return "i1";
  case DType::f8e4m3fn:
    return "f8e4m3fn";
  case DType::f8e4m3fnuz:
    return "f8e4m3fnuz";
  case DType::f8e5m2:
    return "f8e5m2";
  case DType::f8e5m2fnuz:
    return "f8e5m2fnuz";
  case DType::f4e2m1:
    return "f4e2m1";
  case DType::i4:
    return "i4";
  case DType::u4:
    return "u4";
  case DType::i2:
    return "i2";
  case DType::u2:
    return "u2";
  }
  return "?";
}

StatusOr<DType> parseDType(const std::string &name) {
  std::string known;
  for (DType type : kAllDTypes) {
    if (name == dtypeName(type))
      return type;
    known += (known.empty() ? "" : ", ") + std::string(dtypeName(type));
  }
  return invalidArgument("unknown dtype '" + name + "' (expected one of " +
                         known + ")");
}

const char *variableKindName(VariableKind kind) {
  switch (kind) {
  case VariableKind::Parameter:
    return "parameter";
  case VariableKind::FrozenParameter:
    return "frozen_parameter";
  case VariableKind::OptimizerState:
    return "optimizer_state";
  case VariableKind::GradientAccumulator:
    return "gradient_accumulator";
  case VariableKind::Counter:
    return "counter";
  case VariableKind::WorkingCopy:
    return "working_copy";
  }
  return "?";
}

StatusOr<VariableKind> parseVariableKind(const std::string &name) {
  for (VariableKind kind :
       {VariableKind::Parameter, VariableKind::FrozenParameter,
        VariableKind::OptimizerState, VariableKind::GradientAccumulator,
        VariableKind::Counter, VariableKind::WorkingCopy})
    if (name == variableKindName(kind))
      return kind;
  return invalidArgument("unknown variable kind '" + name +
                         "' (expected parameter, frozen_parameter, "
                         "optimizer_state, gradient_accumulator, counter or "
                         "working_copy)");
}

const char *regionName(Region region) {
  return region == Region::Weights ? "weights"
         : region == Region::Host  ? "host"
                                   : "arena";
}

const char *kernelKindName(KernelKind kind) {
  switch (kind) {
  case KernelKind::ElementWise:
    return "elementwise";
  case KernelKind::Rows:
    return "rows";
  case KernelKind::Optimizer:
    return "optimizer";
  case KernelKind::Attention:
    return "attention";
  }
  return "?";
}

const char *epilogueName(Epilogue epilogue) {
  switch (epilogue) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::BiasGradA:
    return "bias_grad_a";
  case Epilogue::BiasGradB:
    return "bias_grad_b";
  case Epilogue::GeluAuxBias:
    return "gelu_aux_bias";
  }
  return "?";
}

const char *stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel:
    return "kernel";
  case StepKind::Contraction:
    return "contraction";
  case StepKind::Collective:
    return "collective";
  }
  return "?";
}

const char *collectiveKindName(Collective::Kind kind) {
  switch (kind) {
  case Collective::Kind::AllReduce:
    return "all_reduce";
  case Collective::Kind::ReduceScatter:
    return "reduce_scatter";
  case Collective::Kind::AllGather:
    return "all_gather";
  case Collective::Kind::Broadcast:
    return "broadcast";
  }
  return "?";
}

const char *reductionName(Collective::Reduction reduction) {
  switch (reduction) {
  case Collective::Reduction::Sum:
    return "sum";
  case Collective::Reduction::Mean:
    return "mean";
  case Collective::Reduction::Max:
    return "max";
  case Collective::Reduction::Min:
    return "min";
  }
  return "?";
}

uint64_t Collective::resultCount() const {
  uint64_t n = groupSize > 0 ? static_cast<uint64_t>(groupSize) : 1;
  switch (kind) {
  case Kind::ReduceScatter:
    return count / n;
  case Kind::AllGather:
    return count * n;
  default:
    return count;
  }
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool isIdentifier(const std::string &name) {
  if (name.empty())
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0))
      return false;
  }
  return true;
}

/// a * b, or false on overflow.
bool mulOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

} // namespace

uint64_t operandSpan(const Contraction &c, Contraction::Operand o) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t span = uint64_t(c.offsets[o]) + uint64_t(c.storedColumns(o)), step;
  if (mulOverflows(uint64_t(c.storedRows(o) - 1), uint64_t(c.ld[o]), step) ||
      __builtin_add_overflow(span, step, &span))
    return kMax;
  const std::vector<int64_t> &strides = c.batchStrides(o);
  for (size_t d = 0; d < c.batchShape.size(); ++d)
    if (mulOverflows(uint64_t(c.batchShape[d] - 1), uint64_t(strides[d]),
                     step) ||
        __builtin_add_overflow(span, step, &span))
      return kMax;
  return span;
}

//===----------------------------------------------------------------------===//
// Manifest::validate
//===----------------------------------------------------------------------===//

namespace {

/// Element count of a buffer whose shape and bytes validate() accepted.
uint64_t bufferElements(const Buffer &buffer) {
  return buffer.bytes / dtypeSize(buffer.dtype);
}

std::string bufferLabel(const Manifest &m, uint32_t id) {
  return "buffer " + std::to_string(id) + " ('" + m.buffers[id].name + "')";
}

Status validateBuffer(const Manifest &m, size_t i) {
  const Buffer &b = m.buffers[i];
  std::string where =
      "manifest: buffers[" + std::to_string(i) + "] ('" + b.name + "')";
  uint64_t elements = 1;
  for (int64_t d : b.shape) {
    if (d < 0)
      return invalidArgument(where + ": negative dimension in shape " +
                             shapeText(b.shape));
    if (mulOverflows(elements, static_cast<uint64_t>(d), elements))
      return invalidArgument(where + ": shape " + shapeText(b.shape) +
                             " overflows");
  }
  uint64_t expected;
  if (mulOverflows(elements, dtypeSize(b.dtype), expected) ||
      b.bytes != expected)
    return invalidArgument(where + ": bytes is " + std::to_string(b.bytes) +
                           " but shape " + shapeText(b.shape) + " of " +
                           dtypeName(b.dtype) + " needs " +
                           std::to_string(elements * dtypeSize(b.dtype)));
  if (b.offset % kBufferAlignment != 0)
    return invalidArgument(where + ": offset " + std::to_string(b.offset) +
                           " is not a multiple of " +
                           std::to_string(kBufferAlignment));
  uint64_t regionBytes = b.region == Region::Weights ? m.weightsBytes
                         : b.region == Region::Host  ? m.hostBytes
                                                     : m.arenaBytes;
  if (b.bytes > regionBytes || b.offset > regionBytes - b.bytes)
    return invalidArgument(
        where + ": offset " + std::to_string(b.offset) + " + " +
        std::to_string(b.bytes) + " bytes exceeds the " + regionName(b.region) +
        " region (" + std::to_string(regionBytes) + " bytes)");
  return Status::ok();
}

Status validateKernel(const Kernel &k, size_t i) {
  std::string where =
      "manifest: kernels[" + std::to_string(i) + "] ('" + k.name + "')";
  if (!isIdentifier(k.name))
    return invalidArgument(where + ": name is not a C identifier");
  if (int(k.onHost) + int(k.copyQueue) + int(k.toDevice) > 1)
    return invalidArgument(where + " is more than one of a host kernel, a "
                                   "copy queue's copy and a copy to the "
                                   "device");
  static const uint32_t gridLimit[3] = {0x7fffffffu, 65535, 65535};
  static const uint32_t blockLimit[3] = {1024, 1024, 64};
  for (int d = 0; d < 3; ++d) {
    if (k.grid[d] == 0 || k.grid[d] > gridLimit[d])
      return invalidArgument(where + ": grid dimension " + std::to_string(d) +
                             " is " + std::to_string(k.grid[d]) +
                             " (must be 1 to " + std::to_string(gridLimit[d]) +
                             ")");
    if (k.block[d] == 0 || k.block[d] > blockLimit[d])
      return invalidArgument(where + ": block dimension " + std::to_string(d) +
                             " is " + std::to_string(k.block[d]) +
                             " (must be 1 to " + std::to_string(blockLimit[d]) +
                             ")");
  }
  uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
  if (threads > 1024)
    return invalidArgument(where + ": block of " + std::to_string(threads) +
                           " threads exceeds 1024");
  if (k.indexChecks.size() > 0xfffffffeu)
    return invalidArgument(where + ": too many index checks");
  return Status::ok();
}

/// The index-error word is 16 bytes of the weights region, present where a
/// kernel checks indices.
Status validateIndexErrorBuffer(const Manifest &m) {
  bool checks = std::any_of(m.kernels.begin(), m.kernels.end(),
                            [](const Kernel &k) {
                              return !k.indexChecks.empty();
                            });
  std::string where = "manifest: indexErrorBuffer";
  if (m.indexErrorBuffer == kNoBuffer)
    return checks ? invalidArgument(where + ": missing, and kernels check "
                                            "indices")
                  : Status::ok();
  if (m.indexErrorBuffer >= m.buffers.size())
    return invalidArgument(where + ": buffer " +
                           std::to_string(m.indexErrorBuffer) +
                           " out of range (" + std::to_string(m.buffers.size()) +
                           " buffers)");
  const Buffer &b = m.buffers[m.indexErrorBuffer];
  if (b.region != Region::Weights || b.bytes < sizeof(IndexError) ||
      b.offset % alignof(IndexError))
    return invalidArgument(where + ": " +
                           bufferLabel(m, m.indexErrorBuffer) +
                           " is not 16 aligned bytes of the weights region");
  return Status::ok();
}

Status validateContraction(const Contraction &c, size_t i,
                           const std::vector<Kernel> &kernels) {
  std::string where =
      "manifest: contractions[" + std::to_string(i) + "] ('" + c.name + "')";
  if (c.m < 1 || c.n < 1 || c.k < 1)
    return invalidArgument(where + ": m, n, k must be positive (got " +
                           std::to_string(c.m) + ", " + std::to_string(c.n) +
                           ", " + std::to_string(c.k) + ")");
  if (c.batchStridesA.size() != c.batchShape.size() ||
      c.batchStridesB.size() != c.batchShape.size() ||
      c.batchStridesOut.size() != c.batchShape.size())
    return invalidArgument(
        where + ": batchShape has " + std::to_string(c.batchShape.size()) +
        " dimensions but batchStridesA has " +
        std::to_string(c.batchStridesA.size()) + ", batchStridesB " +
        std::to_string(c.batchStridesB.size()) + " and batchStridesOut " +
        std::to_string(c.batchStridesOut.size()));
  for (size_t d = 0; d < c.batchShape.size(); ++d) {
    if (c.batchShape[d] < 1)
      return invalidArgument(where + ": batchShape " + shapeText(c.batchShape) +
                             " has a dimension below 1");
    if (c.batchStridesA[d] < 0 || c.batchStridesB[d] < 0 ||
        c.batchStridesOut[d] < 0)
      return invalidArgument(where + ": negative batch stride");
    // Distinct batch entries must not write the same elements.
    if (c.batchShape[d] > 1 && c.batchStridesOut[d] == 0)
      return invalidArgument(where + ": out is broadcast over batch "
                                     "dimension " +
                             std::to_string(d));
  }
  const char *roles[3] = {"A", "B", "out"};
  for (int o = 0; o < 3; ++o) {
    auto operand = static_cast<Contraction::Operand>(o);
    if (c.offsets[o] < 0)
      return invalidArgument(where + ": negative offset of " + roles[o]);
    if (c.ld[o] < c.storedColumns(operand))
      return invalidArgument(where + ": the rows of " + roles[o] + " are " +
                             std::to_string(c.ld[o]) +
                             " elements apart, fewer than their " +
                             std::to_string(c.storedColumns(operand)) +
                             " columns");
  }
  if (!std::isfinite(c.alpha) || !std::isfinite(c.beta))
    return invalidArgument(where + ": alpha and beta must be finite");
  if (c.epilogue == Epilogue::None)
    return Status::ok();
  // An epilogue's vector spans one matrix: no batch, and the operand it
  // sums is packed where its fallback kernel reads it.
  std::string epilogue = where + ": epilogue " + epilogueName(c.epilogue);
  for (int64_t d : c.batchShape)
    if (d != 1)
      return invalidArgument(epilogue + " over a batch " +
                             shapeText(c.batchShape));
  // A kernel the session launches in the epilogue's place: on its buffers
  // alone, so without the index-error word.
  auto fallback = [&](const char *role, uint32_t index) -> Status {
    std::string what = epilogue + ": " + role + " kernel ";
    if (index == kNoKernel)
      return invalidArgument(what + "missing");
    if (index >= kernels.size())
      return invalidArgument(what + std::to_string(index) +
                             " out of range (" +
                             std::to_string(kernels.size()) + " kernels)");
    if (!kernels[index].indexChecks.empty())
      return invalidArgument(what + "'" + kernels[index].name +
                             "' checks indices");
    return Status::ok();
  };
  const bool biased =
      c.epilogue == Epilogue::Bias || c.epilogue == Epilogue::GeluAuxBias;
  if (biased && c.beta != 0.0f)
    return invalidArgument(epilogue + " with beta " + std::to_string(c.beta) +
                           " (the bias is added to the product alone)");
  if (c.epilogue == Epilogue::GeluAuxBias) {
    if (c.offsets[2] != 0 || c.ld[2] != c.n)
      return invalidArgument(epilogue + ": the output is not packed at its "
                                        "buffer's start");
    MEMFIT_RT_RETURN_IF_ERROR(fallback("activation", c.activationKernel));
  }
  if (!biased) {
    int o = c.epilogue == Epilogue::BiasGradA ? 0 : 1;
    if (c.offsets[o] != 0 ||
        c.ld[o] != c.storedColumns(static_cast<Contraction::Operand>(o)))
      return invalidArgument(epilogue + ": the operand it sums is not packed "
                                        "at its buffer's start");
  }
  return fallback("fallback", c.fallbackKernel);
}

Status validateContractionStep(const Manifest &m, const Step &s,
                               const std::string &where) {
  const Contraction &c = m.contractions[s.index];
  std::string label = where + " (contraction '" + c.name + "')";
  const size_t count = c.epilogue == Epilogue::None          ? 3
                       : c.epilogue == Epilogue::GeluAuxBias ? 5
                                                             : 4;
  if (s.buffers.size() != count)
    return invalidArgument(label + ": expected " + std::to_string(count) +
                           " buffers {A, B, out" +
                           (count >= 4 ? ", " + std::string(epilogueName(
                                                     c.epilogue))
                                       : std::string()) +
                           (count == 5 ? ", gelu" : "") +
                           "}, got " + std::to_string(s.buffers.size()));
  if (count == 5) {
    const Buffer &g = m.buffers[s.buffers[4]];
    if (g.dtype != c.dtype ||
        bufferElements(g) < uint64_t(c.m) * uint64_t(c.n))
      return invalidArgument(label + ": the gelu output is " +
                             bufferLabel(m, s.buffers[4]) + " of " +
                             std::to_string(bufferElements(g)) + " " +
                             dtypeName(g.dtype) + " elements; the contraction "
                             "writes " + std::to_string(c.m * c.n) + " " +
                             dtypeName(c.dtype));
  }
  if (count >= 4) {
    const Buffer &v = m.buffers[s.buffers[3]];
    if (v.dtype != c.dtype || bufferElements(v) < uint64_t(c.epilogueLength()))
      return invalidArgument(
          label + ": the " + epilogueName(c.epilogue) + " vector is " +
          bufferLabel(m, s.buffers[3]) + " of " +
          std::to_string(bufferElements(v)) + " " + dtypeName(v.dtype) +
          " elements; the contraction needs " +
          std::to_string(c.epilogueLength()) + " " + dtypeName(c.dtype));
  }
  const char *roles[3] = {"A", "B", "out"};
  for (int r = 0; r < 3; ++r) {
    uint64_t needed = operandSpan(c, static_cast<Contraction::Operand>(r));
    const Buffer &b = m.buffers[s.buffers[r]];
    if (b.dtype != c.dtype)
      return invalidArgument(label + ": " + roles[r] + " is " +
                             bufferLabel(m, s.buffers[r]) + " of " +
                             dtypeName(b.dtype) + " but the contraction is " +
                             dtypeName(c.dtype));
    if (bufferElements(b) < needed)
      return invalidArgument(
          label + ": " + roles[r] + " is " + bufferLabel(m, s.buffers[r]) +
          " of " + std::to_string(bufferElements(b)) +
          " elements but the contraction spans " + std::to_string(needed));
  }
  return Status::ok();
}

Status validateCollective(const Manifest &m, size_t i) {
  const Collective &c = m.collectives[i];
  std::string where =
      "manifest: collectives[" + std::to_string(i) + "] ('" + c.name + "')";
  if (c.groupSize < 1 || c.groupSize > m.worldSize)
    return invalidArgument(where + ": a group of " +
                           std::to_string(c.groupSize) + " ranks in a world of " +
                           std::to_string(m.worldSize));
  if (!c.ranks.empty() && static_cast<int64_t>(c.ranks.size()) != c.groupSize)
    return invalidArgument(where + ": lists " + std::to_string(c.ranks.size()) +
                           " ranks for a group of " +
                           std::to_string(c.groupSize));
  for (int64_t rank : c.ranks)
    if (rank < 0 || rank >= m.worldSize)
      return invalidArgument(where + ": rank " + std::to_string(rank) +
                             " is outside the world of " +
                             std::to_string(m.worldSize));
  if (c.kind == Collective::Kind::Broadcast &&
      (c.root < 0 || c.root >= c.groupSize))
    return invalidArgument(where + ": root " + std::to_string(c.root) +
                           " is outside the group of " +
                           std::to_string(c.groupSize));
  if (c.kind == Collective::Kind::ReduceScatter &&
      c.count % static_cast<uint64_t>(c.groupSize) != 0)
    return invalidArgument(where + ": " + std::to_string(c.count) +
                           " elements do not split into " +
                           std::to_string(c.groupSize) + " slices");
  return Status::ok();
}

Status validateCollectiveStep(const Manifest &m, const Step &s,
                              const std::string &where) {
  const Collective &c = m.collectives[s.index];
  std::string label = where + " (collective '" + c.name + "')";
  if (s.buffers.size() != 2)
    return invalidArgument(label + ": expected 2 buffers {in, out}, got " +
                           std::to_string(s.buffers.size()));
  const char *roles[2] = {"in", "out"};
  uint64_t needed[2] = {c.count, c.resultCount()};
  for (int r = 0; r < 2; ++r) {
    const Buffer &b = m.buffers[s.buffers[r]];
    if (b.dtype != c.dtype || bufferElements(b) != needed[r])
      return invalidArgument(label + ": " + roles[r] + " is " +
                             bufferLabel(m, s.buffers[r]) + " of " +
                             std::to_string(bufferElements(b)) + " " +
                             dtypeName(b.dtype) + " but the collective " +
                             (r ? "writes " : "reads ") +
                             std::to_string(needed[r]) + " " +
                             dtypeName(c.dtype));
  }
  return Status::ok();
}

Status validateBindings(const Manifest &m, const std::vector<Binding> &bindings,
                        const std::string &field) {
  std::set<std::string> seen;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding &b = bindings[i];
    std::string where = "manifest: " + field + "[" + std::to_string(i) +
                        "] ('" + b.name + "')";
    if (b.name.empty())
      return invalidArgument(where + ": empty name");
    if (!seen.insert(b.name).second)
      return invalidArgument(where + ": duplicate name");
    if (b.buffer >= m.buffers.size())
      return invalidArgument(where + ": buffer " + std::to_string(b.buffer) +
                             " out of range (" +
                             std::to_string(m.buffers.size()) + " buffers)");
  }
  return Status::ok();
}

Status validateEntry(const Manifest &m, size_t index,
                     std::set<std::string> &names) {
  const Entry &e = m.entries[index];
  std::string path = "entries[" + std::to_string(index) + "]";
  if (e.name.empty())
    return invalidArgument("manifest: " + path + ": empty name");
  if (!names.insert(e.name).second)
    return invalidArgument("manifest: " + path + " ('" + e.name +
                           "'): duplicate name");
  for (size_t i = 0; i < e.steps.size(); ++i) {
    const Step &s = e.steps[i];
    std::string where =
        "manifest: " + path + ".steps[" + std::to_string(i) + "]";
    size_t count = s.kind == StepKind::Kernel        ? m.kernels.size()
                   : s.kind == StepKind::Contraction ? m.contractions.size()
                                                     : m.collectives.size();
    if (s.index >= count)
      return invalidArgument(where + ": " + stepKindName(s.kind) + " index " +
                             std::to_string(s.index) + " out of range (" +
                             std::to_string(count) + " " +
                             stepKindName(s.kind) + "s)");
    for (uint32_t id : s.buffers)
      if (id >= m.buffers.size())
        return invalidArgument(where + ": buffer " + std::to_string(id) +
                               " out of range (" +
                               std::to_string(m.buffers.size()) + " buffers)");
    if (s.kind == StepKind::Contraction)
      MEMFIT_RT_RETURN_IF_ERROR(validateContractionStep(m, s, where));
    if (s.kind == StepKind::Collective)
      MEMFIT_RT_RETURN_IF_ERROR(validateCollectiveStep(m, s, where));
  }
  MEMFIT_RT_RETURN_IF_ERROR(validateBindings(m, e.inputs, path + ".inputs"));
  return validateBindings(m, e.outputs, path + ".outputs");
}

} // namespace

namespace {

/// A working copy names a trained f32 master of its shape, is f32 or 16-bit
/// and lives on the device; no other variable names a master.
Status validateWorkingCopy(const Manifest &m, const Variable &v,
                           const std::string &where) {
  if (v.kind != VariableKind::WorkingCopy) {
    if (!v.workingCopyOf.empty())
      return invalidArgument(where + ": workingCopyOf, but it is a " +
                             std::string(variableKindName(v.kind)) +
                             ", not a working_copy");
    return Status::ok();
  }
  const Variable *master = m.findVariable(v.workingCopyOf);
  if (!master || master->kind != VariableKind::Parameter)
    return invalidArgument(where + ": workingCopyOf '" + v.workingCopyOf +
                           "' is not a trainable parameter");
  const Buffer &copy = m.buffers[v.buffer];
  const Buffer &from = m.buffers[master->buffer];
  if (copy.shape != from.shape || from.dtype != DType::f32 ||
      (copy.dtype != DType::f32 && copy.dtype != DType::f16 &&
       copy.dtype != DType::bf16) ||
      copy.region != Region::Weights)
    return invalidArgument(
        where + ": a working copy is an f32, f16 or bf16 tensor of the "
                "weights region with its f32 master's shape; it is " +
        dtypeName(copy.dtype) + " " + shapeText(copy.shape) + " in the " +
        regionName(copy.region) + " region, its master '" + master->name +
        "' " + dtypeName(from.dtype) + " " + shapeText(from.shape));
  return Status::ok();
}

/// An on-host kernel's steps touch the host region only: the host reaches
/// no device memory, and may run it after the device has gone on.
Status validateOnHost(const Manifest &m) {
  for (const Entry &e : m.entries)
    for (size_t s = 0; s < e.steps.size(); ++s) {
      const Step &step = e.steps[s];
      if (step.kind != StepKind::Kernel || step.index >= m.kernels.size() ||
          !m.kernels[step.index].onHost)
        continue;
      for (uint32_t id : step.buffers)
        if (id < m.buffers.size() && m.buffers[id].region != Region::Host)
          return invalidArgument(
              "manifest: entry '" + e.name + "' step " + std::to_string(s) +
              ": kernel '" + m.kernels[step.index].name +
              "' runs on the host but reads or writes " + bufferLabel(m, id) +
              " of the " + regionName(m.buffers[id].region) +
              " region, in device memory");
    }
  return Status::ok();
}

} // namespace

Status Manifest::validate() const {
  if (weightsBytes > std::numeric_limits<uint64_t>::max() - kBufferAlignment ||
      arenaBytes > std::numeric_limits<uint64_t>::max() - arenaOffset())
    return invalidArgument("manifest: weightsBytes + arenaBytes overflows");
  for (size_t i = 0; i < buffers.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateBuffer(*this, i));
  for (size_t i = 0; i < kernels.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateKernel(kernels[i], i));
  MEMFIT_RT_RETURN_IF_ERROR(validateIndexErrorBuffer(*this));
  for (size_t i = 0; i < contractions.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateContraction(contractions[i], i, kernels));
  if (worldSize < 1)
    return invalidArgument("manifest: worldSize " + std::to_string(worldSize) +
                           " must be at least 1");
  if (zeroStage < 0 || zeroStage > 3)
    return invalidArgument("manifest: zeroStage " + std::to_string(zeroStage) +
                           " is not a ZeRO stage (0 to 3)");
  for (size_t i = 0; i < collectives.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateCollective(*this, i));
  if (entries.empty())
    return invalidArgument("manifest: entries: no entry to run");
  std::set<std::string> entryNames;
  for (size_t i = 0; i < entries.size(); ++i)
    MEMFIT_RT_RETURN_IF_ERROR(validateEntry(*this, i, entryNames));
  MEMFIT_RT_RETURN_IF_ERROR(validateOnHost(*this));
  std::set<std::string> variableNames;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Variable &v = variables[i];
    std::string where = "manifest: variables[" + std::to_string(i) + "] ('" +
                        v.name + "')";
    if (v.name.empty())
      return invalidArgument(where + ": empty name");
    if (!variableNames.insert(v.name).second)
      return invalidArgument(where + ": duplicate name");
    if (v.buffer >= buffers.size())
      return invalidArgument(where + ": buffer " + std::to_string(v.buffer) +
                             " out of range (" +
                             std::to_string(buffers.size()) + " buffers)");
    if (buffers[v.buffer].region == Region::Arena)
      return invalidArgument(where + ": " + bufferLabel(*this, v.buffer) +
                             " is in the arena, not the weights region");
    const std::vector<int64_t> &shape = buffers[v.buffer].shape;
    if (v.wholeRows != 0 &&
        (v.wholeRows < 0 || shape.empty() || v.wholeRows < shape[0]))
      return invalidArgument(where + ": wholeRows " +
                             std::to_string(v.wholeRows) + " is not the rows "
                             "of a tensor that " +
                             bufferLabel(*this, v.buffer) +
                             " holds a part of");
    MEMFIT_RT_RETURN_IF_ERROR(validateWorkingCopy(*this, v, where));
  }
  if (initializedHostBytes > hostBytes)
    return invalidArgument("manifest: initializedHostBytes " +
                           std::to_string(initializedHostBytes) +
                           " exceeds hostBytes " + std::to_string(hostBytes));
  return Status::ok();
}

const Entry *Manifest::findEntry(const std::string &name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

const Variable *Manifest::findVariable(const std::string &name) const {
  for (const Variable &v : variables)
    if (v.name == name)
      return &v;
  return nullptr;
}

} // namespace memfit::rt
