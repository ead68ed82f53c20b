//===- CompileFuzzer.cpp - libFuzzer target of the whole compile ----------===//
//
// Feeds arbitrary bytes to the importer as a model file and runs every
// input that imports through the rest of the compiler: the forward
// pipeline and the training pipeline (built from the C++ API's options by
// the driver's own functions, as memfit-run and compileModelFile do), then,
// for each, the memory plan and the CUDA emitter (emitExecutable: the
// kernel source text, the manifest and the weights; no host compiler, no
// NVRTC). A diagnostic, a pass that fails or a refused model is a normal
// outcome; a crash, an abort, a sanitizer report, a hang or unbounded
// allocation is a bug. So is a pass that succeeds but leaves IR that fails
// to verify: the target verifies after each pass itself and aborts there,
// naming the pass.
//
// Which options each pipeline runs with (loss, optimizer, precision,
// remat policy and budget, LoRA, fusion, quantized weights...) is chosen
// from a hash of the input, so that the fuzzer explores them along with
// the model; MEMFIT_FUZZ_VARIANT=<n> pins the choice (to minimize a crash
// that only one choice shows), and a replayed file named `<name>.v<n>.onnx`
// runs with variant n (ReplayMain.cpp's LLVMFuzzerReplayFile). Models whose
// tensors (values, constants, parameters) add up to more than 64 MiB, or
// with more than 4096 ops, are skipped, so that the time goes to the passes
// rather than to large constants. With MEMFIT_FUZZ_VERBOSE set, every
// diagnostic, the variant and each stage's outcome are printed.
//
//===----------------------------------------------------------------------===//

#include "../driver/JIT/PipelineOptions.h"

#include "memfit/Import/OnnxImporter.h"
#include "memfit/JIT/Compiler.h"
#include "memfit/Passes/Pipelines.h"
#include "memfit/Target/Cuda/EmitCuda.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

using namespace mlir;

namespace {

/// Models larger than this (all tensors together) are skipped.
constexpr uint64_t kMaxTensorBytes = 64ull << 20;
/// Models with more ops than this are skipped.
constexpr int64_t kMaxOps = 4096;

/// Whether MEMFIT_FUZZ_VERBOSE asks for every diagnostic and outcome.
bool verbose() {
  static bool on = std::getenv("MEMFIT_FUZZ_VERBOSE") != nullptr;
  return on;
}

/// The variant MEMFIT_FUZZ_VARIANT pins, if set.
std::optional<uint64_t> envVariant() {
  static std::optional<uint64_t> pinned = []() -> std::optional<uint64_t> {
    const char *text = std::getenv("MEMFIT_FUZZ_VARIANT");
    uint64_t value;
    if (!text || llvm::StringRef(text).getAsInteger(0, value))
      return std::nullopt;
    return value;
  }();
  return pinned;
}

/// The variant the replayed file's name pins (`<name>.v<n>.onnx`).
std::optional<uint64_t> fileVariant;

/// Bytes of a tensor type with a static shape; saturates, and counts an
/// element of a type without a bit width as 16 bytes.
uint64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return 0;
  if (!shaped.hasStaticShape())
    return kMaxTensorBytes + 1;
  Type element = shaped.getElementType();
  uint64_t elementBytes = element.isIndex()        ? 8
                          : element.isIntOrFloat() ? (element.getIntOrFloatBitWidth() + 7) / 8
                                                   : 16;
  uint64_t bytes = std::max<uint64_t>(elementBytes, 1);
  for (int64_t dim : shaped.getShape())
    bytes = llvm::SaturatingMultiply(bytes, static_cast<uint64_t>(dim));
  return bytes;
}

/// Whether the imported module is small enough to compile: its ops' results,
/// block arguments and tensor attributes (constants, parameters) add up to
/// at most kMaxTensorBytes, and it has at most kMaxOps ops.
bool smallEnough(ModuleOp module) {
  uint64_t total = 0;
  int64_t ops = 0;
  module.walk([&](Operation *op) {
    ++ops;
    for (Type type : op->getResultTypes())
      total = llvm::SaturatingAdd(total, tensorBytes(type));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Type type : block.getArgumentTypes())
          total = llvm::SaturatingAdd(total, tensorBytes(type));
    for (NamedAttribute attr : op->getAttrs()) {
      if (auto elements = dyn_cast<ElementsAttr>(attr.getValue()))
        total = llvm::SaturatingAdd(total, tensorBytes(elements.getType()));
      else if (auto typeAttr = dyn_cast<TypeAttr>(attr.getValue()))
        total = llvm::SaturatingAdd(total, tensorBytes(typeAttr.getValue()));
    }
  });
  return total <= kMaxTensorBytes && ops <= kMaxOps;
}

/// Reads the choices of a variant a few bits at a time, from a hash of the
/// variant and a salt (one per pipeline), so that every variant number
/// makes all of them.
class Choices {
public:
  Choices(uint64_t variant, uint64_t salt) {
    uint64_t words[] = {variant, salt};
    bits = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(words), sizeof(words)));
  }
  /// A value in [0, n).
  unsigned pick(unsigned n) {
    unsigned value = static_cast<unsigned>(bits % n);
    bits /= n;
    return value;
  }
  /// True one time in n.
  bool oneIn(unsigned n) { return pick(n) == 0; }

private:
  uint64_t bits;
};

/// Quantized weights: none in half the variants, else NF4, FP4 or int8.
void chooseWeights(Choices &c, ::memfit::WeightQuantization &weights) {
  switch (c.pick(6)) {
  case 0:
    weights.scheme = ::memfit::WeightStorage::NF4;
    break;
  case 1:
    weights.scheme = ::memfit::WeightStorage::FP4;
    break;
  case 2:
    weights.scheme = ::memfit::WeightStorage::Int8;
    break;
  default:
    break;
  }
  if (weights.scheme != ::memfit::WeightStorage::None && c.oneIn(4))
    weights.blockSize = 32;
  if (weights.scheme == ::memfit::WeightStorage::NF4 ||
      weights.scheme == ::memfit::WeightStorage::FP4)
    weights.doubleQuant = c.oneIn(2);
}

/// Fusion on in half the variants (at most 3 ops a kernel in a third of
/// those); fused attention in three in four.
void chooseFusion(Choices &c, ::memfit::Fusion &fusion) {
  fusion.enabled = c.oneIn(2);
  if (fusion.enabled && c.oneIn(3))
    fusion.maxOps = 3;
  fusion.attention = !c.oneIn(4);
}

/// The forward pass's options of a variant.
::memfit::CompileOptions forwardOptions(uint64_t variant) {
  Choices c(variant, /*salt=*/1);
  ::memfit::CompileOptions options;
  chooseWeights(c, options.weights);
  chooseFusion(c, options.fusion);
  return options;
}

/// The loss that suits the function's results: `output` for one float
/// scalar, else cross-entropy or mse; one variant in eight takes any.
::memfit::LossKind chooseLoss(Choices &c, ModuleOp module) {
  if (c.oneIn(8))
    return static_cast<::memfit::LossKind>(c.pick(3));
  for (auto func : module.getOps<func::FuncOp>()) {
    ArrayRef<Type> results = func.getFunctionType().getResults();
    auto first =
        results.empty() ? RankedTensorType() : dyn_cast<RankedTensorType>(results[0]);
    if (results.size() == 1 && first && first.getRank() == 0)
      return ::memfit::LossKind::Output;
    if (first && first.getRank() >= 2 && c.oneIn(2))
      return ::memfit::LossKind::CrossEntropy;
    return ::memfit::LossKind::Mse;
  }
  return ::memfit::LossKind::Output;
}

/// The training step's options of a variant (`module` decides which loss
/// suits it), and the weights and fusion it runs with.
::memfit::TrainOptions trainOptions(uint64_t variant, ModuleOp module,
                                  ::memfit::WeightQuantization &weights,
                                  ::memfit::Fusion &fusion) {
  Choices c(variant, /*salt=*/2);
  ::memfit::TrainOptions train;
  train.loss = chooseLoss(c, module);
  train.chunkedLoss = !c.oneIn(4);
  if (c.oneIn(4))
    train.lossChunk = 1 + c.pick(4);
  switch (c.pick(6)) {
  case 0:
    train.optimizer = ::memfit::OptimizerKind::Sgd;
    train.momentum = c.oneIn(2) ? 0.9 : 0.0;
    train.nesterov = train.momentum != 0 && c.oneIn(2);
    break;
  case 1:
    train.optimizer = ::memfit::OptimizerKind::AdamW8bit;
    break;
  case 2:
    train.optimizer = ::memfit::OptimizerKind::None;
    break;
  default:
    break;
  }
  if (train.optimizer == ::memfit::OptimizerKind::AdamW && c.oneIn(4))
    train.optimizerStates = ::memfit::StateStorage::Bits8;
  train.precision = static_cast<::memfit::PrecisionKind>(c.pick(3));
  if (train.precision != ::memfit::PrecisionKind::Fp32 && c.oneIn(4))
    train.keepFp32 = {"*LayerNorm*", "*Softmax*"};
  if (train.optimizer != ::memfit::OptimizerKind::None) {
    if (c.oneIn(4))
      train.accumulate = 2;
    if (c.oneIn(4))
      train.clipNorm = 1.0;
    if (train.precision == ::memfit::PrecisionKind::Fp16 && c.oneIn(3))
      train.lossScale = "1024";
  }
  if (c.oneIn(4)) {
    train.loraRank = 1 + c.pick(4);
    if (c.oneIn(2))
      train.loraTargets = {"all-linear"};
    train.loraRslora = c.oneIn(4);
    chooseWeights(c, weights);
  }
  if (c.oneIn(6))
    train.frozen = {"*bias*"};
  switch (c.pick(16)) {
  case 0:
  case 1:
    train.remat = ::memfit::RematPolicy::None;
    break;
  case 2:
  case 3:
    train.remat = ::memfit::RematPolicy::CheckpointLayers;
    break;
  case 4:
    // GLPK, with a short time limit.
    train.remat = ::memfit::RematPolicy::Optimal;
    train.rematTimeLimit = 1;
    train.activationFraction = 0.5;
    break;
  case 5:
  case 6:
    // remat=auto's search does a fixed amount of work, about a second for
    // the fixtures in a Release build and half a minute under the
    // sanitizers: two variants in sixteen.
    train.activationFraction = c.oneIn(4) ? 0.1 : 0.5;
    train.compressActivations = c.oneIn(2);
    if (train.compressActivations && c.oneIn(2))
      train.activationBlockSize = 16;
    break;
  case 7:
    // A budget below any plan: remat must say so, not crash.
    train.budget = 1024;
    break;
  default:
    break;
  }
  chooseFusion(c, fusion);
  return train;
}

/// Verifies the IR after every pass that succeeded, and aborts, naming the
/// pass and the verifier's complaint, when it does not verify: a pass must
/// fail with a diagnostic rather than leave invalid IR.
class VerifyAfterEachPass : public PassInstrumentation {
public:
  void runAfterPass(Pass *pass, Operation *op) override {
    std::string messages;
    LogicalResult verified = success();
    {
      ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &diag) {
        llvm::raw_string_ostream os(messages);
        os << diag.getLocation() << ": " << diag << "\n";
        for (Diagnostic &note : diag.getNotes())
          os << "  note: " << note << "\n";
        return success();
      });
      verified = verify(op);
    }
    if (succeeded(verified))
      return;
    llvm::errs() << "memfit-compile-fuzz: " << pass->getArgument()
                 << " succeeded but left IR that fails to verify:\n"
                 << messages;
    std::abort();
  }
};

/// Runs the pipeline that `build` adds on `module`, then the memory plan and
/// the CUDA emitter; returns what happened, for the verbose log.
template <typename Build>
const char *compile(ModuleOp module, Build &&build) {
  PassManager pm(module->getContext(), ModuleOp::getOperationName());
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>());
  build(pm);
  if (failed(pm.run(module)))
    return "pipeline failed";
  mlir::memfit::CudaEmitOptions emitOptions;
  emitOptions.modelName = "model.onnx";
  ::memfit::rt::Executable executable;
  if (failed(mlir::memfit::emitExecutable(module, emitOptions, executable)))
    return "emission failed";
  // The manifest as memfit-translate writes it.
  std::string json = ::memfit::rt::manifestToJson(executable.manifest);
  return json.empty() ? "emitted (empty manifest)" : "emitted";
}

/// What every input shares: the import options (symbolic sizes) and the
/// model's file name, next to which external data is looked up.
struct FuzzState {
  mlir::memfit::OnnxImportOptions options;
  std::string fileName;

  FuzzState() {
    const char *dir = std::getenv("MEMFIT_FUZZ_MODEL_DIR");
    fileName =
        std::string(dir ? dir : "/nonexistent-memfit-fuzz") + "/model.onnx";
    for (const char *name :
         {"batch", "batch_size", "N"})
      options.dimValues[name] = 2;
    for (const char *name : {"seq", "sequence", "sequence_length", "T"})
      options.dimValues[name] = 4;
  }
};

} // namespace

/// Called by ReplayMain.cpp before each file it replays: a name
/// `<name>.v<n>.<ext>` pins variant n for that file.
extern "C" void LLVMFuzzerReplayFile(const char *path) {
  fileVariant.reset();
  llvm::StringRef stem = llvm::sys::path::stem(path);
  llvm::StringRef tag = llvm::sys::path::extension(stem);
  uint64_t value;
  if (tag.consume_front(".v") && !tag.getAsInteger(10, value))
    fileVariant = value;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FuzzState state;
  // A fresh context per input: what one input interns or loads cannot
  // change how the next compiles, so every crash replays on its own.
  DialectRegistry registry;
  mlir::memfit::registerOnnxImportDialects(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    if (verbose())
      llvm::errs() << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = mlir::memfit::importOnnxModel(
      bytes, state.fileName, &context, state.options);
  if (!module) {
    if (verbose())
      llvm::errs() << "refused by the importer (" << size << " bytes)\n";
    return 0;
  }
  if (!smallEnough(*module)) {
    if (verbose())
      llvm::errs() << "skipped: over 64 MiB of tensors or 4096 ops\n";
    return -1; // Not added to the corpus.
  }

  uint64_t variant = fileVariant  ? *fileVariant
                     : envVariant() ? *envVariant()
                                    : llvm::xxh3_64bits(
                                          llvm::ArrayRef<uint8_t>(data, size)) %
                                          100000;
  if (verbose())
    llvm::errs() << "variant " << variant << "\n";

  // The forward pass. The options are printed before the compile, so that a
  // crash shows them.
  OwningOpRef<ModuleOp> forward = module->clone();
  ::memfit::CompileOptions compileOptions = forwardOptions(variant);
  auto forwardPipeline = ::memfit::forwardPipelineOptions(compileOptions);
  if (verbose())
    llvm::errs() << "forward ("
                 << (forwardPipeline ? mlir::memfit::printForwardPipelineOptions(
                                           **forwardPipeline)
                                     : forwardPipeline.status().message())
                 << ")\n";
  const char *outcome = "options refused";
  if (forwardPipeline)
    outcome = compile(*forward, [&](OpPassManager &pm) {
      mlir::memfit::buildForwardPipeline(pm, **forwardPipeline);
    });
  if (verbose())
    llvm::errs() << "forward: " << outcome << "\n";
  forward = nullptr;

  // The training step.
  ::memfit::WeightQuantization weights;
  ::memfit::Fusion fusion;
  ::memfit::TrainOptions train = trainOptions(variant, *module, weights, fusion);
  auto trainPipeline = ::memfit::trainPipelineOptions(train, weights, fusion);
  if (verbose())
    llvm::errs() << "train ("
                 << (trainPipeline ? mlir::memfit::printTrainPipelineOptions(
                                         **trainPipeline)
                                   : trainPipeline.status().message())
                 << ")\n";
  outcome = "options refused";
  if (trainPipeline)
    outcome = compile(*module, [&](OpPassManager &pm) {
      mlir::memfit::buildTrainPipeline(pm, **trainPipeline);
    });
  if (verbose())
    llvm::errs() << "train: " << outcome << "\n";
  return 0;
}
