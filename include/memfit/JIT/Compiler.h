//===- Compiler.h - the public C++ API: model file to executable -*- C++ -*-===//
//
// Compiling a model:
//
//   memfit::CompileOptions options;
//   options.inputShapes = "batch=2,seq=16";
//   auto exe = memfit::compileModelFile("gpt.onnx", options);
//   if (!exe) { puts(exe.status().message().c_str()); return 1; }
//
// and running it with the runtime (memfit/runtime/Session.h):
//
//   auto session = memfit::rt::Session::create(*exe, memfit::rt::DeviceKind::Host);
//   session.value()->setInput("input_ids", ids);
//   session.value()->run();
//   auto logits = session.value()->getOutput("logits");
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_JIT_COMPILER_H
#define MEMFIT_JIT_COMPILER_H

#include "memfit/Support/OptionKinds.h"
#include "memfit/runtime/Manifest.h"
#include "memfit/runtime/Status.h"

#include <optional>
#include <string>
#include <vector>

namespace memfit {

/// What turns a forward graph into a training step (memfit-autodiff and
/// memfit-optimizer). The executable then has the entries
///   optimizer "none":      `main`        inputs: model inputs + loss inputs;
///                                        outputs: `loss`, `grad.<param>`...
///   accumulate == 1:       `train_step`  inputs: model inputs + loss inputs
///                                        + `lr` (f32, shape []); output `loss`
///   accumulate == k > 1:   `accumulate`  inputs: model inputs + loss inputs;
///                                        output `loss` (of that micro-batch)
///                          `apply`       input `lr`; no outputs
/// Loss inputs: `labels` (int64, the logits' shape without the class
/// dimension) for cross-entropy, `target` (the output's shape and type) for
/// mse, none for "output".
struct TrainOptions {
  /// Output (the model's only output is a float scalar: the loss),
  /// CrossEntropy (over the last dimension of the model's first output,
  /// mean over labels not equal to ignoreIndex) or Mse (mean over all
  /// elements of the first output). memfit/Support/OptionKinds.h spells
  /// each kind (nameOf) and reads what a user types (parseKind).
  LossKind loss = LossKind::Output;
  int64_t ignoreIndex = -100;
  /// Cross-entropy of an LM head's contraction computed a chunk of rows at
  /// a time (memfit.linear_cross_entropy, memfit-chunk-loss): the [N, V]
  /// logits are never held. lossChunk rows per chunk, 0: chosen from the
  /// shapes.
  bool chunkedLoss = true;
  int64_t lossChunk = 0;
  /// Glob patterns (`*`, `?`) over parameter names. Trainable: float
  /// parameters matching any `trainable` pattern (all when empty) and no
  /// `frozen` pattern.
  std::vector<std::string> trainable, frozen;
  /// Fp32, or Bf16 / Fp16: contractions and element-wise ops compute in
  /// the 16-bit type with fp32 master weights (memfit-mixed-precision);
  /// ops whose ONNX node name matches a `keepFp32` glob stay in fp32.
  PrecisionKind precision = PrecisionKind::Fp32;
  /// LoRA (memfit-lora): with loraRank > 0, adapters of that rank on the
  /// targeted contractions ("attention", "mlp", "all-linear" or globs over
  /// module paths; default attention), scaled by loraAlpha / loraRank
  /// (loraAlpha / sqrt(loraRank) with loraRslora), and every other
  /// parameter frozen; loraDropout is PEFT's lora_dropout of the adapters'
  /// input, drawn with loraSeed.
  int64_t loraRank = 0;
  double loraAlpha = 8.0;
  std::vector<std::string> loraTargets, loraExclude;
  bool loraRslora = false;
  double loraDropout = 0.0;
  int64_t loraSeed = 0;
  std::vector<std::string> keepFp32;
  /// Loss scaling: "dynamic", "none", a fixed factor ("1024"), or empty:
  /// dynamic for fp16 with an optimizer, else none. Dynamic scaling starts
  /// at lossScaleInit, backs off on inf/NaN gradients (the step is
  /// skipped) and grows after lossScaleInterval good steps (PyTorch's
  /// GradScaler defaults).
  std::string lossScale;
  double lossScaleInit = 65536.0, lossScaleGrowth = 2.0, lossScaleBackoff = 0.5;
  int64_t lossScaleInterval = 2000;
  /// AdamW, AdamW8bit (AdamW with 8-bit block-wise states, as
  /// bitsandbytes' AdamW8bit), Sgd or None (gradients only, see above).
  OptimizerKind optimizer = OptimizerKind::AdamW;
  /// Fp32 or Bits8: how optimizer states are stored (memfit-quantize;
  /// AdamW8bit implies Bits8). States of fewer than 4096 values, and those
  /// of parameters matching keepFp32States, stay fp32.
  StateStorage optimizerStates = StateStorage::Fp32;
  std::vector<std::string> keepFp32States;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  double momentum = 0.0; // SGD
  bool nesterov = false; // SGD
  /// Clip the gradients to this global L2 norm (0: no clipping).
  double clipNorm = 0.0;
  /// Micro-batches per optimizer step.
  int64_t accumulate = 1;
  /// Data parallelism (memfit-shard): the ranks that run the step, each on
  /// its slice of the global batch (the model's inputs are one rank's), and
  /// the ZeRO stage (0: every rank keeps all the states; gradients are
  /// averaged by an all-reduce; 1: each rank keeps and updates 1/N of the
  /// optimizer states). The session must be launched with that many ranks.
  int64_t worldSize = 1;
  int64_t zero = 0;
  /// zero >= 1: the rank compiled for (each rank's step holds its slices).
  int64_t rank = 0;
  /// zero = 3: each transformer layer's parameters are gathered at the
  /// start of the layer before it, forward and backward (one layer of
  /// prefetch), rather than at the start of the layer itself.
  bool zero3Prefetch = true;
  /// Stages 0 and 1: the gradients' all-reduces in buckets of at most this
  /// many bytes (PyTorch DDP's 25 MiB; 0: one all-reduce per gradient).
  int64_t bucketBytes = 26214400;
  /// ZeRO-Offload: the fp32 masters and optimizer states in host memory
  /// (the plan's host region; pinned and mapped on a GPU), updated on the
  /// host beside the device, which reads working copies.
  bool offloadOptimizer = false;
  /// Rematerialization (memfit-remat): None, CheckpointLayers, Auto or
  /// Optimal; the peak budget in bytes (0: none; parse what a user types
  /// with memfit::parseBytes, memfit/runtime/Bytes.h) and/or the fraction
  /// of the activation memory to keep (0: no limit). Auto and Optimal
  /// change nothing without a budget or fraction.
  RematPolicy remat = RematPolicy::Auto;
  int64_t budget = 0;
  double activationFraction = 0.0;
  /// remat "auto" may also save a forward value compressed: int8 codes with
  /// one absmax per activationBlockSize values (memfit-quantize
  /// saved-activations=int8), where that beats saving and recomputing. Needs
  /// a budget or fraction.
  bool compressActivations = false;
  int64_t activationBlockSize = 256;
  /// Where memfit-remat writes its report ("-": standard output) and the
  /// memory timeline (SVG, CSV); empty: not written.
  std::string rematReport, timeline, timelineData;
  /// Whether the remat report has a row per value (else only the totals).
  bool rematReportRows = true;
  /// remat "optimal": seconds the ILP solver may take.
  double rematTimeLimit = 60;
  /// remat "auto" may also save forward values in host memory (copied out
  /// after their last forward use, back before the backward needs them),
  /// priced at hostBandwidth bytes per second over the bus.
  bool offloadActivations = false;
  double hostBandwidth = 25e9;
};

/// Weights stored quantized (memfit-quantize weights=...): in a training
/// step the frozen ones, in a forward pass all, when only contractions read
/// them and they have at least 4096 values.
struct WeightQuantization {
  /// None, NF4, FP4 or Int8: quantized at compile time in blocks of
  /// blockSize values and dequantized just before each use; doubleQuant
  /// (NF4, FP4) quantizes their absmax too, as QLoRA.
  WeightStorage scheme = WeightStorage::None;
  int64_t blockSize = 64;
  bool doubleQuant = false;
};

/// Fusion (memfit-fuse): chains of element-wise kernels merged into one
/// kernel, for a forward pass and a training step alike.
struct Fusion {
  /// On by default; off compiles one kernel per op (memfit-run --no-fuse).
  bool enabled = true;
  /// At most this many ops in a fused kernel (0: no limit).
  int64_t maxOps = 0;
  /// Where memfit-fuse writes its report ("-": standard output; empty: not
  /// written).
  std::string report;
  /// Spelled-out attention as memfit.attention (memfit-raise-attention),
  /// which keeps no score matrix; on whether or not the rest is fused.
  bool attention = true;
  /// Where memfit-raise-attention writes which softmaxes became attention
  /// and why the others did not ("-": standard output; empty: not
  /// written).
  std::string attentionReport;
};

/// Where compileModelFile's time went, in seconds of wall clock: reading
/// and importing the model (or parsing MLIR), the pass pipeline, and
/// emitting the executable (CUDA C++, manifest, weights); `cache`: looking
/// the compile up in the executable cache (hashing the model, and loading
/// the executable on a hit) and storing it after a miss.
struct CompileTimings {
  double import = 0, passes = 0, emission = 0, cache = 0;
  /// Loaded from the executable cache: nothing was imported or compiled.
  bool cacheHit = false;
};

struct CompileOptions {
  /// Shapes of the ONNX graph's inputs ("input_ids=2x16") or sizes of its
  /// symbolic dimensions ("batch=2,seq=16"); see memfit-opt --input-shape.
  std::string inputShapes;
  /// Values of graph inputs needed at compile time ("axes=0,2"), one per
  /// input; see memfit-opt --input-value.
  std::vector<std::string> inputValues;
  /// The function to compile when the input is MLIR with several.
  std::string entry;
  /// When set, compile the training step instead of the forward pass.
  std::optional<TrainOptions> train;
  WeightQuantization weights;
  Fusion fusion;
  /// Plan only: an ONNX model's float weights in external files are not
  /// read (the files may be absent; they compile as zeros) and the
  /// executable carries no weights. Its manifest has the whole memory plan
  /// and report; sessions refuse to run it (Executable::planOnly). A weight
  /// that is the transpose of another is not found (it is found by value),
  /// so a model that ties them that way plans both.
  bool planOnly = false;
  /// When set, the module that CUDA is emitted from (after the pipeline) is
  /// also written to this file as MLIR text ("-": standard output), as
  /// memfit-opt prints it.
  std::string mlirOutput;
  /// When set, gets where the compile's time went.
  CompileTimings *timings = nullptr;
  /// The executable cache (memfit/runtime/ExecutableCache.h): a compile of
  /// the same model bytes (and external data) with the same options by the
  /// same build of memfit is loaded from `cacheDir` (empty: the kernel
  /// cache's, rt::SessionOptions::cacheDir) instead of run, unless
  /// disableCache. Compiles that write something besides the executable
  /// (mlirOutput, the remat, fusion and attention reports, the timeline)
  /// and plan-only ones always run.
  std::string cacheDir;
  bool disableCache = false;
};

/// The pipeline argument of memfit-opt that compiles as `options` do:
/// `--memfit-train-pipeline=loss=cross-entropy budget=1258291` for a
/// training step, `--memfit-forward-pipeline` (with `=<options>` when any
/// differ from the defaults) for a forward pass:
///   memfit-opt MODEL --input-shape=... '<this>'
/// prints the module that compileModelFile emits CUDA from. Fails on
/// options that the pipeline rejects.
rt::StatusOr<std::string> pipelineArgument(const CompileOptions &options);

/// Compiles an ONNX model (.onnx) or memfit IR (.mlir, .mlirbc) into an
/// executable for the runtime. Errors carry the compiler's diagnostics,
/// each with the file and ONNX node it concerns.
rt::StatusOr<rt::Executable> compileModelFile(const std::string &path,
                                              const CompileOptions &options);

} // namespace memfit

#endif // MEMFIT_JIT_COMPILER_H
