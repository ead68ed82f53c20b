//===- Pipelines.h - the registered pass pipelines -------------*- C++ -*-===//
//
// What the C++ API runs between import and CUDA emission, as registered
// pass pipelines, so that memfit-opt reproduces exactly what the API
// compiles:
//
//   memfit-forward-pipeline   canonicalize, cse, memfit-form-kernels
//   memfit-train-pipeline     canonicalize, cse, memfit-tie-parameters,
//                             memfit-mixed-precision (unless
//                             precision=fp32), memfit-autodiff,
//                             memfit-optimizer (unless optimizer=none),
//                             canonicalize, cse, memfit-form-kernels,
//                             memfit-remat
//
//   memfit-opt gpt.onnx --input-shape=batch=2,seq=16 \
//     --memfit-train-pipeline='loss=cross-entropy budget=1.2MiB'
//
// Options are typed: the loss, optimizer and remat policy are enums whose
// values the parser checks, the budget is a memfit::ByteSize.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_PIPELINES_H
#define MEMFIT_PASSES_PIPELINES_H

#include "memfit/Support/ByteSize.h"

#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::memfit {

enum class LossKind { Output, CrossEntropy, Mse };
enum class OptimizerKind { AdamW, AdamW8bit, Sgd, None };
enum class RematPolicy { None, CheckpointLayers, Auto, Optimal };
enum class PrecisionKind { Fp32, Bf16, Fp16 };
enum class StateStorage { Fp32, Bits8 };
enum class WeightStorage { None, NF4, FP4, Int8 };

/// The names the options, the passes and the C++ API use ("cross-entropy",
/// "adamw", "checkpoint-layers", ...), and back.
llvm::StringRef stringifyLossKind(LossKind kind);
llvm::StringRef stringifyOptimizerKind(OptimizerKind kind);
llvm::StringRef stringifyRematPolicy(RematPolicy policy);
llvm::StringRef stringifyPrecisionKind(PrecisionKind kind);
std::optional<LossKind> symbolizeLossKind(llvm::StringRef name);
std::optional<OptimizerKind> symbolizeOptimizerKind(llvm::StringRef name);
std::optional<RematPolicy> symbolizeRematPolicy(llvm::StringRef name);
std::optional<PrecisionKind> symbolizePrecisionKind(llvm::StringRef name);

/// The options of quantized weights (memfit-quantize weights=...), in both
/// pipelines: frozen weights in a training step, every weight that only
/// contractions read in a forward pass.
struct WeightQuantizationOptions {
  template <typename T> using Option = mlir::detail::PassOptions::Option<T>;
  static constexpr int64_t kDefaultBlockSize = 64;
  explicit WeightQuantizationOptions(mlir::detail::PassOptions &parent)
      : quantizeWeights(
            parent, "quantize-weights",
            llvm::cl::desc("How contraction weights that are not trained are "
                           "stored"),
            llvm::cl::init(WeightStorage::None),
            llvm::cl::values(
                clEnumValN(WeightStorage::None, "none", "as imported"),
                clEnumValN(WeightStorage::NF4, "nf4",
                           "4-bit NormalFloat (QLoRA)"),
                clEnumValN(WeightStorage::FP4, "fp4",
                           "4-bit float (bitsandbytes)"),
                clEnumValN(WeightStorage::Int8, "int8",
                           "8-bit absmax (linear)"))),
        weightBlockSize(parent, "weight-block-size",
                        llvm::cl::desc("Values per absmax of a quantized "
                                       "weight"),
                        llvm::cl::init(kDefaultBlockSize)),
        doubleQuant(parent, "double-quant",
                    llvm::cl::desc("nf4, fp4: quantize the weights' absmax "
                                   "too"),
                    llvm::cl::init(false)) {}

  Option<WeightStorage> quantizeWeights;
  Option<int64_t> weightBlockSize;
  Option<bool> doubleQuant;
};

/// Fusion (memfit-fuse), in both pipelines.
struct FusionOptions {
  template <typename T> using Option = mlir::detail::PassOptions::Option<T>;
  explicit FusionOptions(mlir::detail::PassOptions &parent)
      : fuse(parent, "fuse",
             llvm::cl::desc("Fuse kernels (memfit-raise first, "
                            "memfit-fuse last)"),
             llvm::cl::init(false)),
        fuseMaxOps(parent, "fuse-max-ops",
                   llvm::cl::desc("At most this many ops in a fused kernel "
                                  "(0: no limit)"),
                   llvm::cl::init(0)),
        fusionReport(parent, "fusion-report",
                     llvm::cl::desc("Write memfit-fuse's report ('-': "
                                    "standard output)"),
                     llvm::cl::init("")) {}

  Option<bool> fuse;
  Option<int64_t> fuseMaxOps;
  Option<std::string> fusionReport;
};

/// The options of memfit-forward-pipeline.
struct ForwardPipelineOptions
    : public mlir::PassPipelineOptions<ForwardPipelineOptions> {
  WeightQuantizationOptions weights{*this};
  FusionOptions fusion{*this};
};

struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  // The loss (memfit-autodiff).
  Option<LossKind> loss{
      *this, "loss", llvm::cl::desc("The loss"),
      llvm::cl::init(LossKind::Output),
      llvm::cl::values(
          clEnumValN(LossKind::Output, "output",
                     "the model's only output, a float scalar"),
          clEnumValN(LossKind::CrossEntropy, "cross-entropy",
                     "over the first output's last dimension; adds 'labels'"),
          clEnumValN(LossKind::Mse, "mse",
                     "mean squared error of the first output; adds 'target'"))};
  Option<int64_t> ignoreIndex{
      *this, "ignore-index",
      llvm::cl::desc("Cross-entropy: labels equal to this contribute nothing"),
      llvm::cl::init(-100)};
  ListOption<std::string> trainable{
      *this, "trainable",
      llvm::cl::desc("Glob patterns of the parameters to train (default: all)")};
  ListOption<std::string> frozen{
      *this, "frozen",
      llvm::cl::desc("Glob patterns of parameters not to train")};
  Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("The function to differentiate (default: the only one, "
                     "or main)"),
      llvm::cl::init("")};

  // LoRA (memfit-lora, before memfit-autodiff).
  Option<int64_t> loraRank{
      *this, "lora-rank",
      llvm::cl::desc("LoRA: adapters of this rank on the targeted "
                     "contractions, every other parameter frozen (0: off)"),
      llvm::cl::init(0)};
  Option<double> loraAlpha{
      *this, "lora-alpha",
      llvm::cl::desc("LoRA alpha: the update is scaled by alpha / rank"),
      llvm::cl::init(8.0)};
  ListOption<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("LoRA targets: attention, mlp, all-linear or globs over "
                     "module paths (default: attention)")};
  ListOption<std::string> loraExclude{
      *this, "lora-exclude",
      llvm::cl::desc("LoRA: globs over module paths not to adapt")};
  Option<bool> loraRslora{*this, "lora-rslora",
                          llvm::cl::desc("LoRA: scale by alpha / sqrt(rank)"),
                          llvm::cl::init(false)};
  Option<double> loraDropout{
      *this, "lora-dropout",
      llvm::cl::desc("LoRA: PEFT's lora_dropout (only 0 is supported)"),
      llvm::cl::init(0.0)};
  Option<int64_t> loraSeed{
      *this, "lora-seed",
      llvm::cl::desc("LoRA: seed of the adapters' initial values"),
      llvm::cl::init(0)};

  // Mixed precision (memfit-mixed-precision, before memfit-autodiff).
  Option<PrecisionKind> precision{
      *this, "precision",
      llvm::cl::desc("The type contractions and element-wise ops compute in"),
      llvm::cl::init(PrecisionKind::Fp32),
      llvm::cl::values(
          clEnumValN(PrecisionKind::Fp32, "fp32", "everything in fp32"),
          clEnumValN(PrecisionKind::Bf16, "bf16",
                     "bf16 with fp32 master weights"),
          clEnumValN(PrecisionKind::Fp16, "fp16",
                     "fp16 with fp32 master weights"))};
  ListOption<std::string> keepFp32{
      *this, "keep-fp32",
      llvm::cl::desc("Glob patterns of ONNX node names to run in fp32")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Loss scaling: dynamic, none or a fixed factor "
                     "(default: dynamic for fp16 with an optimizer, else "
                     "none)"),
      llvm::cl::init("")};
  Option<double> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("Dynamic loss scaling: the initial scale"),
      llvm::cl::init(65536.0)};
  Option<double> lossScaleGrowth{
      *this, "loss-scale-growth",
      llvm::cl::desc("Dynamic loss scaling: the growth factor"),
      llvm::cl::init(2.0)};
  Option<double> lossScaleBackoff{
      *this, "loss-scale-backoff",
      llvm::cl::desc("Dynamic loss scaling: the backoff factor"),
      llvm::cl::init(0.5)};
  Option<int64_t> lossScaleInterval{
      *this, "loss-scale-interval",
      llvm::cl::desc("Dynamic loss scaling: good steps before the scale "
                     "grows"),
      llvm::cl::init(2000)};

  // The optimizer (memfit-optimizer).
  Option<OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("The parameter update"),
      llvm::cl::init(OptimizerKind::AdamW),
      llvm::cl::values(
          clEnumValN(OptimizerKind::AdamW, "adamw", "AdamW (PyTorch's)"),
          clEnumValN(OptimizerKind::AdamW8bit, "adamw8bit",
                     "AdamW with 8-bit block-wise states (bitsandbytes' "
                     "AdamW8bit): adamw with optimizer-states=8bit"),
          clEnumValN(OptimizerKind::Sgd, "sgd",
                     "SGD with optional (Nesterov) momentum"),
          clEnumValN(OptimizerKind::None, "none",
                     "no update: the step returns the loss and gradients"))};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (decoupled for AdamW, L2 for SGD)"),
      llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD: Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Clip gradients to this global L2 norm (0: off)"),
      llvm::cl::init(0.0)};
  Option<int64_t> accumulate{
      *this, "accumulate", llvm::cl::desc("Micro-batches per optimizer step"),
      llvm::cl::init(1)};

  // Quantization (memfit-quantize).
  Option<StateStorage> optimizerStates{
      *this, "optimizer-states",
      llvm::cl::desc("How optimizer states are stored (adamw8bit: 8bit)"),
      llvm::cl::init(StateStorage::Fp32),
      llvm::cl::values(
          clEnumValN(StateStorage::Fp32, "fp32", "fp32"),
          clEnumValN(StateStorage::Bits8, "8bit",
                     "8-bit block-wise dynamic codes, one absmax per 256 "
                     "values, for states of at least 4096 elements"))};
  WeightQuantizationOptions weights{*this};
  FusionOptions fusion{*this};
  ListOption<std::string> keepFp32States{
      *this, "keep-fp32-states",
      llvm::cl::desc("Glob patterns of parameters whose optimizer states stay "
                     "fp32 under optimizer-states=8bit")};
  Option<bool> compressActivations{
      *this, "compress-activations",
      llvm::cl::desc("remat=auto may also save a forward value compressed to "
                     "int8 codes with a block absmax (memfit-quantize "
                     "saved-activations=int8), where that beats saving and "
                     "recomputing"),
      llvm::cl::init(false)};
  Option<int64_t> activationBlockSize{
      *this, "activation-block-size",
      llvm::cl::desc("compress-activations: values per absmax"),
      llvm::cl::init(256)};

  // Rematerialization (memfit-remat).
  Option<RematPolicy> remat{
      *this, "remat", llvm::cl::desc("Rematerialization policy"),
      llvm::cl::init(RematPolicy::Auto),
      llvm::cl::values(
          clEnumValN(RematPolicy::None, "none", "save every forward value"),
          clEnumValN(RematPolicy::CheckpointLayers, "checkpoint-layers",
                     "save layer boundaries, recompute the rest"),
          clEnumValN(RematPolicy::Auto, "auto",
                     "cost-aware, to the budget or activation fraction"),
          clEnumValN(RematPolicy::Optimal, "optimal",
                     "the ILP's optimum (GLPK), to the budget"))};
  Option<ByteSize> budget{
      *this, "budget",
      llvm::cl::desc("Peak device memory of the step (weights + arena): "
                     "bytes, or with a unit (512MiB, 1.5GiB, 800MB); 0: none"),
      llvm::cl::init(ByteSize{})};
  Option<double> activationFraction{
      *this, "activation-fraction",
      llvm::cl::desc("Keep at most this fraction of the activation memory "
                     "(0: no limit)"),
      llvm::cl::init(0.0)};
  Option<double> rematTimeLimit{
      *this, "remat-time-limit",
      llvm::cl::desc("remat=optimal: seconds the ILP solver may take"),
      llvm::cl::init(60.0)};
  Option<std::string> rematReport{
      *this, "remat-report",
      llvm::cl::desc("Write the remat report ('-': standard output)"),
      llvm::cl::init("")};
  Option<bool> rematReportRows{
      *this, "remat-report-rows",
      llvm::cl::desc("A row per value in the remat report (false: the "
                     "totals only)"),
      llvm::cl::init(true)};
  Option<std::string> timeline{
      *this, "timeline",
      llvm::cl::desc("Write the step's memory timeline as SVG"),
      llvm::cl::init("")};
  Option<std::string> timelineData{
      *this, "timeline-data",
      llvm::cl::desc("Write the memory timeline's data as CSV"),
      llvm::cl::init("")};
};

/// The spellings of the optimizer-states and quantize-weights values.
llvm::StringRef stringifyStateStorage(StateStorage storage);
std::optional<StateStorage> symbolizeStateStorage(llvm::StringRef name);
llvm::StringRef stringifyWeightStorage(WeightStorage storage);
std::optional<WeightStorage> symbolizeWeightStorage(llvm::StringRef name);

/// Whether optimizer states are stored in 8 bits (optimizer=adamw8bit or
/// optimizer-states=8bit).
bool states8bit(const TrainPipelineOptions &options);

/// The loss scaling the options ask for: "none", "dynamic" or a number
/// (an empty loss-scale resolves to dynamic for fp16 with an optimizer).
std::string resolvedLossScale(const TrainPipelineOptions &options);

/// Checks what the option parser cannot (ranges, combinations); returns an
/// empty string when the options are valid, else the problem.
std::string verifyTrainPipelineOptions(const TrainPipelineOptions &options);

/// The option text that `--memfit-train-pipeline='<text>'` parses back to
/// `options`: every option that differs from its default, in declaration
/// order ("loss=cross-entropy budget=1258291").
std::string printTrainPipelineOptions(const TrainPipelineOptions &options);

/// Checks what the forward pipeline's option parser cannot; an empty string
/// when the options are valid, else the problem.
std::string verifyForwardPipelineOptions(const ForwardPipelineOptions &options);
/// The options that differ from the defaults, in the form
/// `--memfit-forward-pipeline='...'` parses (empty when none do).
std::string printForwardPipelineOptions(const ForwardPipelineOptions &options);

void buildForwardPipeline(OpPassManager &pm,
                          const ForwardPipelineOptions &options = {});
void buildTrainPipeline(OpPassManager &pm,
                        const TrainPipelineOptions &options);

/// Registers memfit-forward-pipeline and memfit-train-pipeline, and the
/// passes they run.
void registerMemfitPipelines();

} // namespace mlir::memfit

#endif // MEMFIT_PASSES_PIPELINES_H
