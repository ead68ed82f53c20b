//===- RunFlags.h - memfit-run's command line -------------------*- C++ -*-===//
//
// The flags of memfit-run by topic, what can be checked of them before any
// file is read, and their translation into the compiler's options
// (CompileOptions, TrainOptions: memfit/JIT/Compiler.h) and the runtime's
// (SessionOptions, TrainingDataOptions, TrainingLoopOptions). A tool
// constructs one RunFlags before llvm::cl::ParseCommandLineOptions (the
// members register themselves) and reads the values after. The kinds
// (--loss, --optimizer, --remat, --precision, ...) are typed options read
// through the one table of memfit/Support/OptionKinds.h.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_FRONTEND_RUNFLAGS_H
#define MEMFIT_FRONTEND_RUNFLAGS_H

#include "memfit/JIT/Compiler.h"
#include "memfit/Support/ByteSize.h"
#include "memfit/Support/KindOption.h"
#include "memfit/runtime/Session.h"
#include "memfit/runtime/TrainingData.h"
#include "memfit/runtime/TrainingLoop.h"

#include "llvm/Support/CommandLine.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memfit::frontend {

namespace cl = llvm::cl;

/// memfit-run's flags. A flag's category also says what it needs: see
/// check() and ignoredCompileFlags().
struct RunFlags {
  template <typename T> using Opt = cl::opt<T>;
  using List = cl::list<std::string>;

  RunFlags();
  RunFlags(const RunFlags &) = delete;
  RunFlags &operator=(const RunFlags &) = delete;

  /// The text at the top of --help, and the data scheme --help-data prints
  /// (which a PyTorch reference script mirrors).
  static const char *overview();
  static const char *dataScheme();
  [[noreturn]] static void printDataSchemeAndExit();

  /// The categories --help lists; the rest is left to --help-hidden.
  std::vector<const cl::OptionCategory *> categories() const;

  /// The first problem of the flags that needs no file to see (values out
  /// of range, flags without what they need, --input and --data specs);
  /// nothing when there is none. Fills inputPaths and dataPaths.
  std::optional<std::string> check();

  /// The flags that compile a model, given with an executable directory
  /// (which they cannot change): "--budget", ...
  std::vector<std::string> ignoredCompileFlags() const;

  /// What to compile, or why the flags contradict each other.
  rt::StatusOr<CompileOptions> compileOptions() const;
  rt::SessionOptions sessionOptions() const;
  rt::TrainingDataOptions dataOptions() const;
  /// The loop's schedule, checkpoints and losses (not its streams).
  rt::TrainingLoopOptions loopOptions() const;
  /// Whether training ends by writing the trained weights out (--export,
  /// --export-safetensors, --export-adapters).
  bool exportsWeights() const {
    return !exportAdapters.empty() || !exportSafetensors.empty() ||
           !exportOnnx.empty();
  }

  /// This process's rank in a data-parallel launch (memfit-run sets it from
  /// the launcher): a ZeRO stage >= 1 compiles the rank's own step.
  int64_t rank = 0;

  /// --input and --data, by input name (after check()).
  std::map<std::string, std::string> inputPaths, dataPaths;

  cl::OptionCategory inputCategory{"Inputs"};
  cl::OptionCategory deviceCategory{"Device"};
  cl::OptionCategory outputCategory{"Output"};
  cl::OptionCategory trainCategory{"Training (--train, --gradients)"};
  cl::OptionCategory loopCategory{"Training loop and data (--train)"};
  cl::OptionCategory optimizerCategory{"Optimizer (--train)"};
  cl::OptionCategory rematCategory{
      "Memory and rematerialization (--train, --gradients)"};

  Opt<std::string> modelPath{cl::Positional, cl::Required,
                             cl::desc("<model.onnx | model.mlir | "
                                      "executable directory>"),
                             cl::cat(inputCategory)};
  Opt<std::string> inputShapes{
      "input-shape", cl::cat(inputCategory),
      cl::desc("ONNX input shapes (name=2x16) or symbolic dimension sizes "
               "(batch=2,seq=16)")};
  List inputValues{"input-value", cl::cat(inputCategory),
                   cl::desc("Values of an ONNX input needed at compile "
                            "time: name=1,2,3 (repeatable)")};
  List inputFiles{"input", cl::cat(inputCategory),
                  cl::desc("An input from a .npy file: name=path "
                           "(repeatable); inputs not given are random")};
  Opt<uint64_t> seed{"seed", cl::init(0), cl::cat(inputCategory),
                     cl::desc("Seed of the random inputs")};
  Opt<int64_t> intHigh{
      "int-high", cl::init(2), cl::cat(inputCategory),
      cl::desc("Random integer inputs are drawn from [0, int-high)")};
  Opt<std::string> device{"device", cl::init("auto"), cl::cat(deviceCategory),
                          cl::desc("host, cuda, or auto (cuda where a "
                                   "GPU is usable, else host)")};
  Opt<bool> compileOnly{
      "compile-only", cl::cat(deviceCategory),
      cl::desc("Stop after compiling (and after NVRTC for each --arch)")};
  List archs{"arch", cl::cat(deviceCategory),
             cl::desc("With --compile-only: compile the kernels with "
                      "NVRTC to CUBIN for this architecture (sm_80, ...)")};
  Opt<bool> planOnly{
      "plan-only", cl::cat(deviceCategory),
      cl::desc("Plan and report memory without the weights and without "
               "running: an ONNX model's external weight files may be "
               "absent; prints the memory report and the remat totals")};
  Opt<unsigned> repeat{"repeat", cl::init(1), cl::cat(deviceCategory),
                       cl::desc("Run the forward pass this many times "
                                "and report the best time")};
  Opt<std::string> cacheDir{
      "cache-dir", cl::cat(deviceCategory),
      cl::desc("Cache directory of compiled kernels and executables "
               "(default: $MEMFIT_CACHE_DIR or ~/.cache/memfit)")};
  Opt<bool> noCache{"no-cache", cl::cat(deviceCategory),
                    cl::desc("Do not use the kernel and executable caches")};
  Opt<unsigned> hostThreads{
      "host-threads", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("Host backend: worker threads for blocks and contractions "
               "(default: $MEMFIT_HOST_THREADS, else the CPUs the process "
               "may run on)")};
  Opt<unsigned> hostTaskThreads{
      "host-task-threads", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("Host backend: threads for the updates of "
               "--offload=optimizer, beside the workers (default: "
               "$MEMFIT_HOST_TASK_THREADS, else 1)")};
  Opt<bool> noHostOverlap{
      "no-host-overlap", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("Host backend: run each update of --offload=optimizer and "
               "each collective in its step, without overlapping the later "
               "steps (to measure what the overlap hides)")};
  Opt<bool> profile{
      "profile", cl::Hidden, cl::cat(outputCategory),
      cl::desc("Wait for every kernel and contraction and print where a "
               "run's time went: by kind and by op, per run")};
  Opt<bool> tf32{
      "tf32", cl::cat(deviceCategory),
      cl::desc("On --device=cuda, let f32 contractions round their inputs to "
               "TF32 on tensor cores (off by default, as in PyTorch)")};
  Opt<bool> noCudaGraphs{
      "no-cuda-graphs", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("On --device=cuda, launch each step rather than capture the "
               "step as a CUDA graph at its second run and replay it")};
  Opt<bool> timings{
      "timings", cl::Hidden, cl::cat(outputCategory),
      cl::desc("Print where the time before the first step went: import, "
               "passes, emission, host compile or NVRTC, the session, and "
               "the first step")};
  Opt<std::string> outputDir{
      "output-dir", cl::cat(outputCategory),
      cl::desc("Write every output as <dir>/<name>.npy")};
  Opt<std::string> saveDir{
      "save-executable", cl::cat(outputCategory),
      cl::desc("Write the compiled executable (manifest, kernels.cu, "
               "weights.bin) to this directory")};
  Opt<std::string> predict{
      "predict", cl::cat(outputCategory),
      cl::desc("Print each step's predicted time on this GPU (a100, h100, "
               "h200 or all) by kind of kernel, against the roofline floor, "
               "before running; with --plan-only, without running")};
  Opt<bool> memoryReport{
      "memory-report", cl::cat(outputCategory),
      cl::desc("Print the memory report: weights, gradients, optimizer "
               "states, activations and bytes per parameter")};
  Opt<bool> quiet{"quiet", cl::cat(outputCategory),
                  cl::desc("Print only errors")};
  Opt<bool> printPipeline{
      "print-pipeline", cl::cat(outputCategory),
      cl::desc("Print the memfit-opt command that reproduces the compile")};
  Opt<std::string> emitMlir{
      "emit-mlir", cl::cat(outputCategory),
      cl::desc("Write the module that CUDA is emitted from as MLIR ('-': "
               "stdout)")};
  Opt<bool> train{"train", cl::cat(trainCategory),
                  cl::desc("Compile the training step and train the "
                           "model")};
  Opt<bool> gradients{
      "gradients", cl::cat(trainCategory),
      cl::desc("Compile loss and gradients only (no optimizer), run them once "
               "and write every output (loss, grad.<param>) to --output-dir")};
  Opt<LossKind> lossKind{
      "loss", cl::init(LossKind::Output), cl::cat(trainCategory),
      cl::desc("output (the model's output is the loss), cross-entropy (input "
               "'labels') or mse (input 'target')")};
  Opt<int64_t> ignoreIndex{
      "ignore-index", cl::cat(trainCategory),
      cl::desc("Cross-entropy: labels to ignore (default -100)")};
  Opt<bool> noChunkedLoss{
      "no-chunked-loss", cl::Hidden, cl::cat(trainCategory),
      cl::desc("Cross-entropy: hold the LM head's logits whole, for "
               "comparison; by default the loss and its gradients are "
               "computed a chunk of rows at a time (memfit-chunk-loss)")};
  Opt<int64_t> lossChunk{
      "loss-chunk", cl::init(0), cl::Hidden, cl::cat(trainCategory),
      cl::desc("Cross-entropy: rows of logits per chunk (default: chosen "
               "from the shapes)")};
  List trainablePatterns{
      "trainable", cl::CommaSeparated, cl::cat(trainCategory),
      cl::desc("Glob patterns of the parameters to train (default: all)")};
  List frozenPatterns{"frozen", cl::CommaSeparated, cl::cat(trainCategory),
                      cl::desc("Glob patterns of parameters to leave alone")};
  Opt<PrecisionKind> precision{
      "precision", cl::init(PrecisionKind::Fp32), cl::cat(trainCategory),
      cl::desc("fp32, bf16 (--bf16) or fp16 (--fp16): 16-bit compute, fp32 "
               "master weights")};
  // Hugging Face's spellings, listed in --precision's line.
  Opt<int64_t> loraRank{
      "lora-rank", cl::init(0), cl::cat(trainCategory),
      cl::desc("LoRA: train adapters of this rank on --lora-targets, every "
               "other parameter frozen")};
  Opt<double> loraAlpha{"lora-alpha", cl::init(8.0), cl::cat(trainCategory),
                        cl::desc("LoRA alpha (scale alpha / rank; "
                                 "default 8)")};
  List loraTargets{
      "lora-targets", cl::CommaSeparated, cl::cat(trainCategory),
      cl::desc("LoRA targets: attention (default), mlp, all-linear, or globs "
               "over module paths (h.*.attn.c_attn)")};
  List loraExclude{"lora-exclude", cl::CommaSeparated, cl::Hidden,
                   cl::cat(trainCategory),
                   cl::desc("LoRA: globs over module paths not to adapt")};
  Opt<bool> loraRslora{"lora-rslora", cl::Hidden, cl::cat(trainCategory),
                       cl::desc("LoRA: scale by alpha / sqrt(rank)")};
  Opt<double> loraDropout{"lora-dropout", cl::init(0.0), cl::Hidden,
                          cl::cat(trainCategory),
                          cl::desc("LoRA: PEFT's lora_dropout, the "
                                   "probability of dropping an element of "
                                   "an adapter's input")};
  Opt<int64_t> loraSeed{"lora-seed", cl::init(0), cl::Hidden,
                        cl::cat(trainCategory),
                        cl::desc("LoRA: seed of the adapters' initial "
                                 "values and of their dropout")};
  Opt<std::string> loadAdapters{
      "load-adapters", cl::cat(trainCategory),
      cl::desc("Set trainable parameters (LoRA adapters: PEFT's or memfit's "
               "names) from a safetensors file before running")};
  Opt<bool> bf16{"bf16", cl::Hidden, cl::cat(trainCategory),
                 cl::desc("--precision=bf16")};
  Opt<bool> fp16{"fp16", cl::Hidden, cl::cat(trainCategory),
                 cl::desc("--precision=fp16")};
  Opt<std::string> lossScaleFlag{
      "loss-scale", cl::cat(trainCategory),
      cl::desc("dynamic (default with --fp16), none or a fixed factor; "
               "--loss-scale-{init,growth,backoff,interval} as GradScaler's")};
  // GradScaler's settings, named in --loss-scale's line and in
  // docs/training.md.
  Opt<double> lossScaleInit{
      "loss-scale-init", cl::Hidden, cl::cat(trainCategory),
      cl::desc("Dynamic loss scaling: initial scale (default 65536)")};
  Opt<int64_t> lossScaleInterval{
      "loss-scale-interval", cl::Hidden, cl::cat(trainCategory),
      cl::desc("Dynamic loss scaling: good steps before the scale grows "
               "(default 2000)")};
  Opt<double> lossScaleGrowth{"loss-scale-growth", cl::Hidden,
                              cl::cat(trainCategory),
                              cl::desc("growth factor (default 2)")};
  Opt<double> lossScaleBackoff{"loss-scale-backoff", cl::Hidden,
                               cl::cat(trainCategory),
                               cl::desc("backoff factor (default 0.5)")};
  List keepFp32{"keep-fp32", cl::CommaSeparated, cl::cat(trainCategory),
                cl::desc("Glob patterns of ONNX node names to keep in fp32")};
  Opt<int64_t> worldSize{
      "world-size", cl::init(0), cl::cat(trainCategory),
      cl::desc("Data parallel ranks, each on its slice of the global batch "
               "(default: the launcher's, mpirun -np N; any with --plan-only)")};
  Opt<int64_t> zero{"zero", cl::init(0), cl::cat(trainCategory),
                    cl::desc("ZeRO stage of data parallel training: 0, "
                             "gradients all-reduced; 1, states sharded; 2, "
                             "gradients too; 3, parameters too")};
  Opt<mlir::memfit::ByteSize> bucket{
      "bucket", cl::Hidden, cl::cat(trainCategory),
      cl::desc("Data parallel, ZeRO stages 0 and 1: all-reduce the "
               "gradients in buckets of at most this size (default 25MiB on "
               "GPUs, as PyTorch DDP; 0, one all-reduce per gradient, on "
               "the host backend)")};
  Opt<bool> zero3Prefetch{
      "zero3-prefetch", cl::init(true), cl::Hidden, cl::cat(trainCategory),
      cl::desc("--zero=3: all-gather a transformer layer's parameters at "
               "the start of the layer before it, forward and backward (one "
               "layer of prefetch, for the exchange to overlap compute; the "
               "peak may hold one more layer's weights); false: at the start "
               "of the layer itself (default true)")};
  Opt<std::string> offload{
      "offload", cl::init("none"), cl::cat(trainCategory),
      cl::desc("none, or optimizer and/or activations (comma-separated): "
               "optimizer states, and saved values remat=auto chooses, in "
               "host memory (pinned on a GPU), planned and reported apart")};
  Opt<double> hostBandwidth{
      "host-bandwidth", cl::init(25.0), cl::Hidden, cl::cat(rematCategory),
      cl::desc("GB/s between host memory and the device, which prices "
               "offloaded activations (default 25: PCIe 4 x16)")};
  Opt<int64_t> steps{"steps", cl::init(20), cl::cat(loopCategory),
                     cl::desc("Optimizer steps to take (more, when resuming)")};
  Opt<int64_t> accumulate{
      "accumulate", cl::init(1), cl::cat(loopCategory),
      cl::desc("Micro-batches per optimizer step (gradient accumulation)")};
  Opt<double> learningRateFlag{"lr", cl::init(1e-3), cl::cat(loopCategory),
                               cl::desc("Peak learning rate")};
  Opt<std::string> lrSchedule{
      "lr-schedule", cl::init("constant"), cl::cat(loopCategory),
      cl::desc("constant, cosine or linear (decay to --min-lr at "
               "--decay-steps), after --warmup steps of linear warmup")};
  Opt<int64_t> warmup{"warmup", cl::init(0), cl::cat(loopCategory),
                      cl::desc("Warmup steps")};
  Opt<int64_t> decaySteps{
      "decay-steps", cl::init(0), cl::cat(loopCategory),
      cl::desc("The global step at which the decay ends (default: the last "
               "step of this run)")};
  Opt<double> minLr{"min-lr", cl::init(0.0), cl::cat(loopCategory),
                    cl::desc("Learning rate at the end of the decay")};
  Opt<std::string> corpus{
      "corpus", cl::cat(loopCategory),
      cl::desc("Train on a text file, character by character (--help-data)")};
  List dataFiles{"data", cl::cat(loopCategory),
                 cl::desc("name=FILE.npy: micro-batches of an input "
                          "along the first dimension (repeatable)")};
  Opt<std::string> lossesPath{
      "losses", cl::cat(loopCategory),
      cl::desc("Write step,loss lines (CSV) to this file")};
  Opt<std::string> checkpointPath{
      "checkpoint", cl::cat(loopCategory),
      cl::desc("Save the training state to this file at the end (and every "
               "--save-every steps)")};
  Opt<int64_t> saveEvery{
      "save-every", cl::init(0), cl::cat(loopCategory),
      cl::desc("Save --checkpoint after every step whose global number is a "
               "multiple of this")};
  Opt<std::string> exportAdapters{
      "export-adapters", cl::cat(loopCategory),
      cl::desc("After training, write the LoRA adapters to this safetensors "
               "file, with PEFT's names")};
  Opt<std::string> exportSafetensors{
      "export-safetensors", cl::cat(loopCategory),
      cl::desc("After training, write every trained parameter to this "
               "safetensors file, with its ONNX initializer's name")};
  Opt<std::string> exportOnnx{
      "export", cl::cat(loopCategory),
      cl::desc("After training, write the trained model as ONNX to this file: "
               "the original graph with the trained weights, LoRA merged")};
  Opt<bool> exportExternalData{
      "export-external-data", cl::Hidden, cl::cat(loopCategory),
      cl::desc("--export: the weights in a side file (<file>.data) even for a "
               "small model")};
  Opt<std::string> resumePath{
      "resume", cl::cat(loopCategory),
      cl::desc("Load this checkpoint before training; the step counter "
               "continues from it")};
  Opt<OptimizerKind> optimizer{"optimizer", cl::init(OptimizerKind::AdamW),
                               cl::cat(optimizerCategory),
                               cl::desc("adamw, adamw8bit (8-bit block-wise "
                                        "states, as bitsandbytes') or sgd")};
  Opt<StateStorage> optimizerStates{
      "optimizer-states", cl::init(StateStorage::Fp32), cl::Hidden,
      cl::cat(optimizerCategory),
      cl::desc("fp32 or 8bit: how optimizer states are stored (SGD momentum "
               "too; adamw8bit implies 8bit)")};
  Opt<WeightStorage> quantizeWeights{
      "quantize-weights", cl::init(WeightStorage::None),
      cl::cat(deviceCategory),
      cl::desc("none, nf4, fp4 or int8: store the weights that only matmuls "
               "read quantized (with --train, the --frozen ones)")};
  Opt<int64_t> weightBlockSize{
      "weight-block-size", cl::init(64), cl::Hidden, cl::cat(deviceCategory),
      cl::desc("Values per absmax of a quantized weight (default 64)")};
  Opt<bool> doubleQuant{
      "double-quant", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("nf4, fp4: quantize the weights' absmax too (QLoRA)")};
  Opt<bool> noFuse{"no-fuse", cl::cat(deviceCategory),
                   cl::desc("One kernel per op. By default kernels are fused: "
                            "spelled-out GELU, norms and softmax raised to "
                            "named ops, element-wise chains and row ops "
                            "merged, the optimizer's updates as multi-tensor "
                            "kernels, transposes into the contractions")};
  Opt<bool> fuse{"fuse", cl::Hidden, cl::cat(deviceCategory),
                 cl::desc("Fuse kernels (the default; kept for scripts that "
                          "name it)")};
  Opt<bool> noFusedAttention{
      "no-fused-attention", cl::Hidden, cl::cat(deviceCategory),
      cl::desc("Keep attention spelled out as the model has it (its scores "
               "and probabilities stored), for comparison; by default it "
               "becomes memfit.attention, which keeps one log-sum-exp per "
               "query row (memfit-raise-attention)")};
  Opt<int64_t> fuseMaxOps{
      "fuse-max-ops", cl::init(0), cl::Hidden, cl::cat(deviceCategory),
      cl::desc("At most this many ops in a fused kernel (0: no limit)")};
  Opt<std::string> attentionReport{
      "attention-report", cl::ValueOptional, cl::Hidden,
      cl::cat(outputCategory),
      cl::desc("Write which softmaxes became memfit.attention, and why the "
               "others did not, to this file (no value: standard output)")};
  Opt<std::string> fusionReport{
      "fusion-report", cl::ValueOptional, cl::cat(outputCategory),
      cl::desc("Write memfit-fuse's report (each kernel's bytes, "
               "FLOPs, ops and ONNX nodes against the step's lower bound) to "
               "this file (no value: standard output)")};
  List keepFp32States{
      "keep-fp32-states", cl::CommaSeparated, cl::Hidden,
      cl::cat(optimizerCategory),
      cl::desc("With 8-bit states: glob patterns of parameters whose states "
               "stay fp32 (an embedding, say)")};
  Opt<double> beta1{"beta1", cl::cat(optimizerCategory),
                    cl::desc("AdamW beta1 (default 0.9)")};
  Opt<double> beta2{"beta2", cl::cat(optimizerCategory),
                    cl::desc("AdamW beta2 (default 0.999)")};
  Opt<double> eps{"eps", cl::cat(optimizerCategory),
                  cl::desc("AdamW epsilon (default 1e-8)")};
  Opt<double> weightDecay{"weight-decay", cl::cat(optimizerCategory),
                          cl::desc("Decoupled weight decay (default 0.01)")};
  Opt<double> momentum{"momentum", cl::cat(optimizerCategory),
                       cl::desc("SGD momentum (default 0)")};
  Opt<bool> nesterov{"nesterov", cl::cat(optimizerCategory),
                     cl::desc("SGD Nesterov momentum")};
  Opt<double> clipNorm{
      "clip-norm", cl::cat(optimizerCategory),
      cl::desc("Clip gradients to this global L2 norm (default 0: none)")};
  Opt<RematPolicy> rematPolicy{
      "remat", cl::init(RematPolicy::Auto), cl::cat(rematCategory),
      cl::desc("Rematerialization policy: none, checkpoint-layers, auto "
               "(default; needs --budget or --activation-fraction) or "
               "optimal")};
  Opt<mlir::memfit::ByteSize> budgetFlag{
      "budget", cl::cat(rematCategory),
      cl::desc("Peak device memory of the training step (weights + arena): "
               "bytes, or with KiB/MiB/GiB/KB/MB/GB")};
  Opt<double> activationFractionFlag{
      "activation-fraction", cl::cat(rematCategory),
      cl::desc("Keep at most this fraction of the activation memory that "
               "saving every forward value takes")};
  Opt<bool> compressActivations{
      "compress-activations", cl::cat(rematCategory),
      cl::desc("--remat=auto may also save a forward value compressed to int8 "
               "(block-wise absmax), where that beats saving it whole and "
               "recomputing it")};
  Opt<int64_t> activationBlockSize{
      "activation-block-size", cl::init(256), cl::Hidden,
      cl::cat(rematCategory),
      cl::desc("--compress-activations: values per absmax (default 256)")};
  Opt<std::string> rematReport{
      "remat-report", cl::ValueOptional, cl::cat(rematCategory),
      cl::desc("Print memfit-remat's decisions (each forward value saved, "
               "recomputed or compressed, and why), or write them to =FILE")};
  Opt<std::string> timelinePath{
      "memory-timeline", cl::cat(rematCategory),
      cl::desc("Write the memory timeline of the training step (bytes live "
               "per step by category) as SVG to this file")};
  Opt<std::string> timelineDataPath{
      "memory-timeline-data", cl::Hidden, cl::cat(rematCategory),
      cl::desc("Write the memory timeline's data as CSV to this file")};
  /// --help-data prints dataScheme() and exits while the command line is
  /// parsed, as --help does (no model needed).
  Opt<bool> helpData{
      "help-data", cl::cat(outputCategory),
      cl::desc("Print which tokens and inputs each training step reads, then "
               "exit"),
      cl::callback([](const bool &) { printDataSchemeAndExit(); })};

private:
  rt::StatusOr<TrainOptions> trainOptions() const;
  std::vector<cl::Option *> given(const cl::OptionCategory &category) const;
};

} // namespace memfit::frontend

#endif // MEMFIT_FRONTEND_RUNFLAGS_H
