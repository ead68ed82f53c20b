//===- OptionKinds.h - the choices memfit's options make ---------*- C++ -*-===//
//
// The enumerated choices of memfit's options: the loss, the optimizer, the
// remat policy, the compute precision, and how optimizer states, frozen
// weights and saved activations are stored. The C++ API
// (memfit/JIT/Compiler.h), the pipelines' and passes' options (Passes.td,
// Pipelines.h) and the tools' flags all hold these enums, and all of them
// parse and print them through the one table of spellings here
// (KindOption.h makes each kind an llvm::cl option type). Plain C++, so
// that the public API includes it without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_SUPPORT_OPTIONKINDS_H
#define MEMFIT_SUPPORT_OPTIONKINDS_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace memfit {

/// What the training step minimizes (memfit-autodiff).
enum class LossKind { Output, CrossEntropy, Mse };
/// The parameter update (memfit-optimizer; adamw8bit also stores the states
/// in 8 bits, none returns the gradients).
enum class OptimizerKind { AdamW, AdamW8bit, Sgd, None };
/// What memfit-remat saves and what it recomputes.
enum class RematPolicy { None, CheckpointLayers, Auto, Optimal };
/// The type contractions and element-wise ops compute in.
enum class PrecisionKind { Fp32, Bf16, Fp16 };
/// How optimizer states are stored (memfit-quantize optimizer-states=).
enum class StateStorage { Fp32, Bits8 };
/// How frozen contraction weights are stored (memfit-quantize weights=).
enum class WeightStorage { None, NF4, FP4, Int8 };
/// How memfit-remat may keep a saved activation (memfit-quantize
/// saved-activations=).
enum class ActivationStorage { Fp32, Int8 };

/// One choice of a kind: its value, its one spelling and a line of help.
template <typename Kind> struct KindName {
  Kind kind;
  const char *name;
  const char *help;
};

/// Every choice of `Kind` in declaration order, and what the kind is called
/// in diagnostics ("loss", "remat policy").
template <typename Kind> struct KindNames {
  const KindName<Kind> *first;
  size_t count;
  const char *noun;
  const KindName<Kind> *begin() const { return first; }
  const KindName<Kind> *end() const { return first + count; }
};

/// The table of `Kind` (OptionKinds.cpp defines one per kind above).
template <typename Kind> KindNames<Kind> kindNames();
template <> KindNames<LossKind> kindNames<LossKind>();
template <> KindNames<OptimizerKind> kindNames<OptimizerKind>();
template <> KindNames<RematPolicy> kindNames<RematPolicy>();
template <> KindNames<PrecisionKind> kindNames<PrecisionKind>();
template <> KindNames<StateStorage> kindNames<StateStorage>();
template <> KindNames<WeightStorage> kindNames<WeightStorage>();
template <> KindNames<ActivationStorage> kindNames<ActivationStorage>();

/// The spelling of `kind` ("cross-entropy", "checkpoint-layers").
template <typename Kind> const char *nameOf(Kind kind) {
  for (const KindName<Kind> &entry : kindNames<Kind>())
    if (entry.kind == kind)
      return entry.name;
  return "?";
}

/// The kind spelled `name`, or nothing.
template <typename Kind> std::optional<Kind> parseKind(std::string_view name) {
  for (const KindName<Kind> &entry : kindNames<Kind>())
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

/// The spellings as a diagnostic lists them: "output, cross-entropy or mse".
template <typename Kind> std::string kindList() {
  KindNames<Kind> names = kindNames<Kind>();
  std::string list;
  for (size_t i = 0; i < names.count; ++i) {
    if (i > 0)
      list += i + 1 == names.count ? " or " : ", ";
    list += names.first[i].name;
  }
  return list;
}

/// "unknown loss 'foo'; expected output, cross-entropy or mse".
template <typename Kind> std::string unknownKind(std::string_view name) {
  return "unknown " + std::string(kindNames<Kind>().noun) + " '" +
         std::string(name) + "'; expected " + kindList<Kind>();
}

} // namespace memfit

#endif // MEMFIT_SUPPORT_OPTIONKINDS_H
