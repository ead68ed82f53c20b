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
#include "memfit/Support/KindOption.h"

#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::memfit {

// The kinds the options choose between, with their one spelling
// (memfit/Support/OptionKinds.h): the C++ API, these options and the
// passes' own options hold the same enums.
using ::memfit::ActivationStorage;
using ::memfit::LossKind;
using ::memfit::OptimizerKind;
using ::memfit::PrecisionKind;
using ::memfit::RematPolicy;
using ::memfit::StateStorage;
using ::memfit::WeightStorage;

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
                           "stored: none, nf4, fp4 or int8"),
            llvm::cl::init(WeightStorage::None)),
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
                            "memfit-fold-transposes and memfit-accumulate "
                            "before remat, memfit-fuse last); on by default"),
             llvm::cl::init(true)),
        fuseMaxOps(parent, "fuse-max-ops",
                   llvm::cl::desc("At most this many ops in a fused kernel "
                                  "(0: no limit)"),
                   llvm::cl::init(0)),
        fusionReport(parent, "fusion-report",
                     llvm::cl::desc("Write memfit-fuse's report ('-': "
                                    "standard output)"),
                     llvm::cl::init("")),
        fusedAttention(parent, "fused-attention",
                       llvm::cl::desc("Raise spelled-out attention to "
                                      "memfit.attention, which keeps no "
                                      "score matrix (memfit-raise-attention)"),
                       llvm::cl::init(true)),
        attentionReport(parent, "attention-report",
                        llvm::cl::desc("Write which softmaxes became "
                                       "memfit.attention, and why the others "
                                       "did not ('-': standard output)"),
                        llvm::cl::init("")) {}

  Option<bool> fuse;
  Option<int64_t> fuseMaxOps;
  Option<std::string> fusionReport;
  Option<bool> fusedAttention;
  Option<std::string> attentionReport;
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
      *this, "loss", llvm::cl::desc("The loss: output (the model's only output), "
                                      "cross-entropy (adds 'labels') or mse "
                                      "(adds 'target')"),
      llvm::cl::init(LossKind::Output)};
  Option<int64_t> ignoreIndex{
      *this, "ignore-index",
      llvm::cl::desc("Cross-entropy: labels equal to this contribute nothing"),
      llvm::cl::init(-100)};
  Option<bool> chunkedLoss{
      *this, "chunked-loss",
      llvm::cl::desc("Cross-entropy of an LM head's contraction a chunk of "
                     "rows at a time, its logits never held "
                     "(memfit-autodiff linear-loss, memfit-chunk-loss)"),
      llvm::cl::init(true)};
  Option<int64_t> lossChunk{
      *this, "loss-chunk",
      llvm::cl::desc("Rows of logits per chunk (0: chosen from the shapes)"),
      llvm::cl::init(0)};
  Option<bool> earlyUpdates{
      *this, "early-updates",
      llvm::cl::desc("Run each optimizer update as soon as its gradient is "
                     "complete, freeing the gradient (memfit-early-updates)"),
      llvm::cl::init(true)};
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
      llvm::cl::desc("LoRA: PEFT's lora_dropout of the adapters' input"),
      llvm::cl::init(0.0)};
  Option<int64_t> loraSeed{
      *this, "lora-seed",
      llvm::cl::desc("LoRA: seed of the adapters' initial values and of "
                     "their dropout"),
      llvm::cl::init(0)};

  // Mixed precision (memfit-mixed-precision, before memfit-autodiff).
  Option<PrecisionKind> precision{
      *this, "precision",
      llvm::cl::desc("The type contractions and element-wise ops compute "
                     "in: fp32, bf16 or fp16 (fp32 master weights)"),
      llvm::cl::init(PrecisionKind::Fp32)};
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
      *this, "optimizer", llvm::cl::desc("The parameter update: adamw, adamw8bit (8-bit "
                                     "states), sgd or none (the gradients)"),
      llvm::cl::init(OptimizerKind::AdamW)};
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

  // Data parallelism (memfit-shard).
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("Ranks that run the step on their slices of the batch "
                     "(1: one process, no memfit-shard)"),
      llvm::cl::init(1)};
  Option<int64_t> zero{
      *this, "zero",
      llvm::cl::desc("ZeRO stage of memfit-shard (0: gradients all-reduced; "
                     "1: optimizer states sharded; 2: gradients too; 3: "
                     "parameters too)"),
      llvm::cl::init(0)};
  Option<int64_t> rank{
      *this, "rank",
      llvm::cl::desc("The rank the step is compiled for (zero >= 1)"),
      llvm::cl::init(0)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("memfit-shard: the gradients' all-reduce buckets, at "
                     "most this many bytes (0: one all-reduce per gradient)"),
      llvm::cl::init(26214400)};
  Option<bool> zero3Prefetch{
      *this, "zero3-prefetch",
      llvm::cl::desc("zero=3: gather a transformer layer's parameters at "
                     "the start of the layer before it, in the forward and "
                     "in the backward (one layer of prefetch), rather than "
                     "at the start of the layer itself"),
      llvm::cl::init(true)};
  Option<bool> offloadOptimizer{
      *this, "offload-optimizer",
      llvm::cl::desc("ZeRO-Offload: keep the fp32 masters and optimizer "
                     "states in host memory (the plan's host region) and "
                     "update them on the host, beside the device"),
      llvm::cl::init(false)};

  // Quantization (memfit-quantize).
  Option<StateStorage> optimizerStates{
      *this, "optimizer-states",
      llvm::cl::desc("How optimizer states are stored: fp32 or 8bit "
                     "(adamw8bit: 8bit)"),
      llvm::cl::init(StateStorage::Fp32)};
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
      *this, "remat", llvm::cl::desc("Rematerialization policy: none, "
                                    "checkpoint-layers, auto or optimal"),
      llvm::cl::init(RematPolicy::Auto)};
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
  Option<bool> offloadActivations{
      *this, "offload-activations",
      llvm::cl::desc("remat=auto may also save a forward value in host "
                     "memory, priced by its bytes over the bus"),
      llvm::cl::init(false)};
  Option<double> hostBandwidth{
      *this, "host-bandwidth",
      llvm::cl::desc("Bytes per second between host memory and the device "
                     "(default 25e9: PCIe 4 x16)"),
      llvm::cl::init(25e9)};
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
