//===- OptionKinds.cpp - the spellings of the options' choices ------------===//
//
// The one table per kind of OptionKinds.h: what users type, what the
// pipelines print and what --help says of each choice.
//
//===----------------------------------------------------------------------===//

#include "memfit/Support/OptionKinds.h"

#include <iterator>

namespace memfit {

namespace {

template <typename Kind, size_t N>
KindNames<Kind> table(const KindName<Kind> (&names)[N], const char *noun) {
  return {names, N, noun};
}

constexpr KindName<LossKind> kLosses[] = {
    {LossKind::Output, "output", "the model's only output, a float scalar"},
    {LossKind::CrossEntropy, "cross-entropy",
     "over the first output's last dimension; adds the input 'labels'"},
    {LossKind::Mse, "mse",
     "mean squared error of the first output; adds the input 'target'"}};

constexpr KindName<OptimizerKind> kOptimizers[] = {
    {OptimizerKind::AdamW, "adamw", "AdamW (PyTorch's)"},
    {OptimizerKind::AdamW8bit, "adamw8bit",
     "AdamW with 8-bit block-wise states (bitsandbytes' AdamW8bit)"},
    {OptimizerKind::Sgd, "sgd", "SGD with optional (Nesterov) momentum"},
    {OptimizerKind::None, "none",
     "no update: the step returns the loss and the gradients"}};

constexpr KindName<RematPolicy> kRematPolicies[] = {
    {RematPolicy::None, "none", "save every forward value"},
    {RematPolicy::CheckpointLayers, "checkpoint-layers",
     "save layer boundaries, recompute the rest"},
    {RematPolicy::Auto, "auto",
     "cost-aware, to the budget or activation fraction"},
    {RematPolicy::Optimal, "optimal", "the ILP's optimum (GLPK), to the budget"}};

constexpr KindName<PrecisionKind> kPrecisions[] = {
    {PrecisionKind::Fp32, "fp32", "everything in fp32"},
    {PrecisionKind::Bf16, "bf16", "bf16 compute, fp32 master weights"},
    {PrecisionKind::Fp16, "fp16", "fp16 compute, fp32 master weights"}};

constexpr KindName<StateStorage> kStateStorages[] = {
    {StateStorage::Fp32, "fp32", "fp32"},
    {StateStorage::Bits8, "8bit",
     "8-bit block-wise dynamic codes, one absmax per 256 values"}};

constexpr KindName<WeightStorage> kWeightStorages[] = {
    {WeightStorage::None, "none", "as imported"},
    {WeightStorage::NF4, "nf4", "4-bit NormalFloat (QLoRA)"},
    {WeightStorage::FP4, "fp4", "4-bit float (bitsandbytes)"},
    {WeightStorage::Int8, "int8", "8-bit absmax (linear)"}};

constexpr KindName<ActivationStorage> kActivationStorages[] = {
    {ActivationStorage::Fp32, "fp32", "saved as computed"},
    {ActivationStorage::Int8, "int8",
     "memfit-remat may keep a saved activation as int8 codes with a block "
     "absmax"}};

} // namespace

template <> KindNames<LossKind> kindNames<LossKind>() {
  return table(kLosses, "loss");
}
template <> KindNames<OptimizerKind> kindNames<OptimizerKind>() {
  return table(kOptimizers, "optimizer");
}
template <> KindNames<RematPolicy> kindNames<RematPolicy>() {
  return table(kRematPolicies, "remat policy");
}
template <> KindNames<PrecisionKind> kindNames<PrecisionKind>() {
  return table(kPrecisions, "precision");
}
template <> KindNames<StateStorage> kindNames<StateStorage>() {
  return table(kStateStorages, "optimizer-state storage");
}
template <> KindNames<WeightStorage> kindNames<WeightStorage>() {
  return table(kWeightStorages, "weight quantization");
}
template <> KindNames<ActivationStorage> kindNames<ActivationStorage>() {
  return table(kActivationStorages, "activation storage");
}

} // namespace memfit
