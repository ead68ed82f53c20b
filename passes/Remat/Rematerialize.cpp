//===- Rematerialize.cpp - memfit-remat: save or recompute under a budget -===//
//
// The training step is a fixed schedule of kernels and contractions: the
// forward steps, then the backward steps and the parameter updates. Every
// forward step whose results the backward reads is a candidate: it is saved
// (its results stay live from the forward pass to their last backward use)
// or recomputed (cloned into the backward just before the first backward
// step that needs it, from saved values, parameters and inputs). The pass
// first moves every parameter update to just after its gradient is final,
// builds the IR-free RematProblem of the step, picks the candidates to
// recompute with a policy (RematPolicies.h), rewrites the function and
// plans its memory again to check the budget on the real order. See
// docs/remat.md.
//
//===----------------------------------------------------------------------===//

#include "StepGraph.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"
#include "memfit/runtime/Bytes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <functional>
#include <optional>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITREMATPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::remat;
using ::memfit::formatBytes;

//===----------------------------------------------------------------------===//
// Early parameter updates
//===----------------------------------------------------------------------===//

/// Moves every op whose result a memfit.assign stores (a parameter or state
/// update) to just after the last op it depends on: the producers of its
/// operands and every step that reads the old value of what it assigns. The
/// optimizer emits all updates after the whole backward pass, which keeps
/// every gradient live until the end; updated early, a gradient dies as
/// soon as its update has run.
static void scheduleUpdatesEarly(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::StringMap<SmallVector<Value>> loads;
  for (Operation &op : body)
    if (auto load = dyn_cast<LoadParameterOp>(op))
      loads[load.getName()].push_back(load.getResult());
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isScheduledStep(&op) && llvm::any_of(op.getUsers(), [](Operation *user) {
          return isa<AssignOp>(user);
        }))
      updates.push_back(&op);

  for (Operation *update : updates) {
    // The latest op that must run before the update.
    Operation *barrier = nullptr;
    auto after = [&](Operation *op) {
      if (!op || op == update)
        return;
      while (op->getBlock() != &body)
        op = op->getParentOp();
      if (!barrier || barrier->isBeforeInBlock(op))
        barrier = op;
    };
    SmallVector<Operation *> movableLoads;
    for (Value operand : update->getOperands()) {
      Operation *def = operand.getDefiningOp();
      auto load = dyn_cast_or_null<LoadParameterOp>(def);
      if (load && llvm::all_of(load->getUsers(), [&](Operation *user) {
            return user == update;
          }))
        movableLoads.push_back(load);
      else
        after(def);
    }
    SmallVector<AssignOp> assigns;
    for (Operation *user : update->getUsers())
      if (auto assign = dyn_cast<AssignOp>(user)) {
        assigns.push_back(assign);
        for (Value loaded : loads.lookup(assign.getName())) {
          SmallVector<Operation *> readers;
          collectViewReaders(loaded, readers);
          for (Operation *reader : readers)
            after(reader);
        }
      }
    if (!barrier)
      continue;
    if (!barrier->isBeforeInBlock(update)) {
      // A later op reads the old value (a recomputation in the backward):
      // the update goes after it, if nothing but its assigns reads it.
      bool movable = llvm::all_of(update->getUsers(), [&](Operation *user) {
        return isa<AssignOp>(user) || barrier->isBeforeInBlock(user);
      });
      if (!movable)
        continue;
    }
    Operation *insertAfter = barrier;
    for (Operation *load : movableLoads) {
      load->moveAfter(insertAfter);
      insertAfter = load;
    }
    update->moveAfter(insertAfter);
    insertAfter = update;
    // Assigns and any view feeding them follow their update.
    for (AssignOp assign : assigns) {
      assign->moveAfter(insertAfter);
      insertAfter = assign;
    }
  }
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// A memfit.kernel of the single op that `build` makes from the kernel's
/// arguments (`inputs`), at the builder's point.
static KernelOp
singleOpKernel(OpBuilder &builder, Location loc, TypeRange resultTypes,
               ValueRange inputs,
               function_ref<Operation *(OpBuilder &, ValueRange)> build) {
  auto kernel = KernelOp::create(builder, loc, resultTypes, inputs);
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&kernel.getBody());
  for (Value input : inputs)
    body->addArgument(input.getType(), loc);
  Operation *op = build(builder, body->getArguments());
  YieldOp::create(builder, loc, op->getResults());
  return kernel;
}

/// Every view on `value` (transitively), which a clone of the backward may
/// have cloned onto an earlier copy of it.
static void collectViews(Value value, SmallVectorImpl<Value> &views) {
  for (Operation *user : value.getUsers())
    if (isBufferView(user)) {
      views.push_back(user->getResult(0));
      collectViews(user->getResult(0), views);
    }
}

/// Clones the recomputed candidates into the backward and points the
/// backward at the clones; quantizes the compressed candidates after their
/// last forward use and dequantizes them before each backward step that
/// needs them. Marks saved candidates with why.
static void rewrite(StepGraph &graph, const RematDecision &d,
                    const RematEvaluation &ev) {
  MLIRContext *context = graph.func.getContext();
  const RematProblem &problem = graph.problem;
  int nC = graph.ops.size();
  int nF = graph.numForward();
  IRMapping mapping;
  llvm::DenseSet<Value> evictedValues;
  for (int c = 0; c < nC; ++c) {
    Operation *op = graph.ops[c].op;
    if (ev.recomputedAt[c] >= 0)
      for (Value result : op->getResults())
        evictedValues.insert(result);
    if (ev.isCompressed(c))
      for (unsigned index : graph.ops[c].compressedResults)
        evictedValues.insert(op->getResult(index));
  }

  OpBuilder builder(context);
  // The codes and absmax of each compressed result, made after the
  // candidate's last forward use.
  llvm::DenseMap<Value, std::pair<Value, Value>> compressedOf;
  auto scheme = QuantSchemeAttr::get(context, QuantScheme::Linear);
  int64_t blockSize = graph.compression ? graph.compression->blockSize : 0;
  auto blockAttr = builder.getI64IntegerAttr(blockSize);
  for (int c = 0; c < nC; ++c) {
    if (!ev.isCompressed(c))
      continue;
    const CandidateOp &info = graph.ops[c];
    builder.setInsertionPointAfter(
        graph.steps[problem.candidates[c].lastForwardUse]);
    for (unsigned index : info.compressedResults) {
      Value result = info.op->getResult(index);
      if (graph.compression->offload) {
        // A copy in the host region (the memory plan puts it there).
        Location loc =
            NameLoc::get(StringAttr::get(context, info.name + " (offloaded)"),
                         info.op->getLoc());
        KernelOp kernel = copyKernel(builder, loc, result);
        kernel->setAttr(kOffloadedAttr, StringAttr::get(context, info.name));
        compressedOf[result] = {kernel.getResult(0), Value()};
        continue;
      }
      auto [codesType, absmaxType] = compressedTypes(result, blockSize);
      Location loc =
          NameLoc::get(StringAttr::get(context, info.name + " (compressed)"),
                       info.op->getLoc());
      KernelOp kernel = singleOpKernel(
          builder, loc, {codesType, absmaxType}, result,
          [&](OpBuilder &b, ValueRange args) -> Operation * {
            return QuantizeOp::create(b, loc, TypeRange{codesType, absmaxType},
                                      args[0], scheme, blockAttr);
          });
      kernel->setAttr(kCompressedAttr, StringAttr::get(context, info.name));
      compressedOf[result] = {kernel.getResult(0), kernel.getResult(1)};
    }
  }
  // The value to read in place of `value` at the builder's point: the clone
  // of a recomputed value, through clones of the views on it.
  std::function<Value(Value)> resolve = [&](Value value) -> Value {
    if (Value mapped = mapping.lookupOrNull(value))
      return mapped;
    Operation *def = value.getDefiningOp();
    if (def && isBufferView(def)) {
      Value source = resolve(def->getOperand(0));
      if (source == def->getOperand(0))
        return value;
      Operation *view = builder.clone(*def, mapping);
      view->removeAttr(kBackwardAttr);
      return view->getResult(0);
    }
    return value;
  };

  for (int b = 0; b < graph.numBackward(); ++b) {
    Operation *reader = graph.steps[nF + b];
    // Dequantize what the step and its recomputations need, first; fetch
    // an offloaded value back before the step fetchAhead steps earlier
    // (after that step's own recomputations), so that its copy overlaps it.
    builder.setInsertionPoint(
        graph.steps[nF + std::max(0, b - problem.fetchAhead)]);
    for (int c : ev.decompressAt[b]) {
      const CandidateOp &info = graph.ops[c];
      for (unsigned index : info.compressedResults) {
        Value result = info.op->getResult(index);
        auto [codes, absmax] = compressedOf.lookup(result);
        bool offloaded = graph.compression->offload;
        Location loc = NameLoc::get(
            StringAttr::get(context, info.name + (offloaded ? " (fetched)"
                                                           : " (decompressed)")),
            info.op->getLoc());
        KernelOp kernel =
            offloaded ? copyKernel(builder, loc, codes)
                      : singleOpKernel(
                            builder, loc, result.getType(),
                            ValueRange{codes, absmax},
                            [&](OpBuilder &b, ValueRange args) -> Operation * {
                              return DequantizeOp::create(
                                  b, loc, result.getType(), args[0], args[1],
                                  scheme, blockAttr);
                            });
        kernel->setAttr(offloaded ? kFetchedAttr : kDecompressedAttr,
                        StringAttr::get(context, info.name));
        mapping.map(result, kernel.getResult(0));
        // Views cloned onto the previous copy are cloned again.
        SmallVector<Value> views;
        collectViews(result, views);
        for (Value view : views)
          mapping.erase(view);
      }
    }
    for (int c : ev.recomputeAt[b]) {
      Operation *op = graph.ops[c].op;
      builder.setInsertionPoint(reader);
      SmallVector<Value> operands;
      for (Value operand : op->getOperands())
        operands.push_back(resolve(operand));
      IRMapping local;
      for (auto [from, to] : llvm::zip(op->getOperands(), operands))
        local.map(from, to);
      Operation *clone = builder.clone(*op, local);
      for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
        mapping.map(from, to);
      SmallVector<Attribute> names;
      for (int s : recomputationSources(problem, ev, c))
        names.push_back(StringAttr::get(context, graph.ops[s].name));
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(bufferRoot(operand))) {
          auto attr = graph.func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), "onnx.name");
          std::string name =
              "input " + (attr ? attr.str()
                               : std::to_string(arg.getArgNumber()));
          names.push_back(StringAttr::get(context, name));
        }
      clone->setAttr(kRecomputedFromAttr, ArrayAttr::get(context, names));
      clone->removeAttr(kSavedAttr);
    }
    // Point the step at the clones.
    builder.setInsertionPoint(reader);
    for (OpOperand &operand : reader->getOpOperands()) {
      Value root = bufferRoot(operand.get());
      if (!evictedValues.contains(root))
        continue;
      operand.set(resolve(operand.get()));
    }
  }
  // Views of recomputed values that only the backward used are dead now.
  SmallVector<Operation *> dead;
  for (Operation &op : graph.func.getBody().front())
    if (isBufferView(&op) && op.use_empty())
      dead.push_back(&op);
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    Operation *source = op->getOperand(0).getDefiningOp();
    op->erase();
    if (source && isBufferView(source) && source->use_empty())
      dead.push_back(source);
  }
  // Why each saved candidate is saved.
  for (int c = 0; c < nC; ++c) {
    const RematCandidate &cand = problem.candidates[c];
    const CandidateOp &info = graph.ops[c];
    if (ev.lastNeed[c] < 0 || ev.recomputedAt[c] >= 0)
      continue;
    if (ev.isCompressed(c)) {
      info.op->setAttr(
          kSavedAttr,
          StringAttr::get(
              context,
              graph.compression->offload
                  ? llvm::formatv("offloaded to host memory: {0} over the "
                                  "bus each way frees {1}",
                                  formatBytes(info.compressCost.bytes / 2),
                                  formatBytes(cand.bytes -
                                              cand.compressedBytes))
                        .str()
                  : llvm::formatv("compressed to int8 codes: "
                                  "quantizing costs {0} to free {1}",
                                  formatFlops(info.compressCost.flops),
                                  formatBytes(cand.bytes -
                                              cand.compressedBytes))
                        .str()));
      continue;
    }
    std::string why = d.keptWhy.empty() ? "" : d.keptWhy[c];
    if (!cand.recomputable)
      why = "not recomputable: " + info.why;
    if (why.empty())
      why = d.policy == ::memfit::RematPolicy::None
                ? "policy none saves every value the backward reads"
                : llvm::formatv("cheaper to keep: recomputing costs {0} "
                                "to free {1}",
                                formatFlops(info.cost.flops),
                                formatBytes(cand.bytes))
                      .str();
    info.op->setAttr(kSavedAttr, StringAttr::get(context, why));
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

struct MemfitRematPass
    : public mlir::memfit::impl::MemfitRematPassBase<MemfitRematPass> {
  using MemfitRematPassBase::MemfitRematPassBase;

  void runOnOperation() override;

  std::optional<RematDecision> decide(const StepGraph &graph,
                                      std::string &note);
  void reportUnmeetable(const FunctionResult &result,
                        std::optional<int64_t> budgetBytes, int64_t slack,
                        int64_t weightsBytes, StringRef note);
};

} // namespace

/// The plan of the pass's policy for the graph's problem (its caps set),
/// or nothing with `note` saying why when there is none.
std::optional<RematDecision>
MemfitRematPass::decide(const StepGraph &graph, std::string &note) {
  const RematProblem &problem = graph.problem;
  if (policy == ::memfit::RematPolicy::None)
    return keepEverything(problem);
  if (policy == ::memfit::RematPolicy::CheckpointLayers)
    return checkpointLayers(problem);
  if (problem.arenaCap < 0 && problem.activationCap < 0)
    return keepEverything(problem);
  if (policy == ::memfit::RematPolicy::Auto)
    return decideAuto(RematModel(problem));
  int unrecomputable;
  std::optional<RematDecision> d =
      decideOptimal(problem, timeLimit, note, unrecomputable);
  if (unrecomputable >= 0) {
    const CandidateOp &info = graph.ops[unrecomputable];
    note = "no plan fits without recomputing '" + info.name +
           "', which cannot be recomputed (" + info.why + ")";
  }
  return d;
}

void MemfitRematPass::runOnOperation() {
  auto start = std::chrono::steady_clock::now();
  ModuleOp module = getOperation();
  // The option parser read the size; 0 is no budget.
  std::optional<int64_t> budgetBytes;
  if (budget.getValue().bytes < 0) {
    mlir::emitError(module.getLoc())
        << "memfit-remat: budget must not be negative, got "
        << budget.getValue().bytes;
    return signalPassFailure();
  }
  if (!(timeLimit > 0)) {
    mlir::emitError(module.getLoc())
        << "memfit-remat: time-limit must be positive, got " << timeLimit;
    return signalPassFailure();
  }
  if (budget.getValue().bytes > 0)
    budgetBytes = budget.getValue().bytes;
  if (activationFraction < 0 || activationFraction > 1) {
    mlir::emitError(module.getLoc())
        << "memfit-remat: activation-fraction must be in [0, 1], got "
        << activationFraction;
    return signalPassFailure();
  }
  // memfit-quantize saved-activations=int8 asks for a third choice.
  std::optional<Compression> compression;
  if (auto request =
          module->getAttrOfType<DictionaryAttr>(kSavedActivationsAttr)) {
    auto scheme = request.getAs<StringAttr>("scheme");
    auto blockSize = request.getAs<IntegerAttr>("block_size");
    if (!scheme || scheme.getValue() != "int8" || !blockSize ||
        blockSize.getInt() < 1) {
      mlir::emitError(module.getLoc())
          << "memfit-remat: " << kSavedActivationsAttr
          << " must be {scheme = \"int8\", block_size = N} with N >= 1, got "
          << request;
      return signalPassFailure();
    }
    if (policy == ::memfit::RematPolicy::Optimal) {
      mlir::emitError(module.getLoc())
          << "memfit-remat: saving activations compressed (memfit-quantize "
          << "saved-activations=int8) needs policy auto: the ILP of policy "
          << "optimal only keeps or recomputes";
      return signalPassFailure();
    }
    compression = Compression{blockSize.getInt()};
  }
  // offload-activations: the third choice is a copy in host memory. A byte
  // over the bus costs what kReferenceBandwidth / hostBandwidth bytes
  // moved on the device do (the cost's units: a device byte is 1).
  if (offloadActivations) {
    constexpr double kReferenceBandwidth = 2e12; // an A100's HBM, about
    if (compression || policy == ::memfit::RematPolicy::Optimal ||
        !(hostBandwidth > 0)) {
      mlir::emitError(module.getLoc())
          << "memfit-remat: offload-activations needs policy auto, a "
             "positive host-bandwidth, and no int8 compression of saved "
             "activations beside it";
      return signalPassFailure();
    }
    compression = Compression{0, true, kReferenceBandwidth / hostBandwidth};
  }
  for (func::FuncOp func : definedFunctions(module))
    scheduleUpdatesEarly(func);

  // The weights region does not depend on the decision.
  FailureOr<ModulePlan> basePlan = planModule(module, definedFunctions(module));
  if (failed(basePlan))
    return signalPassFailure();
  int64_t weightsBytes = basePlan->weightsBytes;
  if (budgetBytes && *budgetBytes < weightsBytes) {
    mlir::emitError(module.getLoc())
        << "memfit-remat: budget " << formatBytes(*budgetBytes)
        << " cannot be met: the weights region alone takes "
        << formatBytes(weightsBytes);
    return signalPassFailure();
  }

  // The model counts live bytes; the planner's first-fit placement can need
  // a little more. Decide on a copy, plan it, and decide again with the
  // excess taken off the cap until the plan fits.
  int64_t slack = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    OwningOpRef<ModuleOp> work = cast<ModuleOp>(module->clone());
    SmallVector<func::FuncOp> funcs = definedFunctions(*work);
    std::vector<FunctionResult> results;
    for (func::FuncOp func : funcs) {
      StepGraph graph = buildStepGraph(func, compression);
      if (graph.numBackward() == 0 || graph.ops.empty())
        continue;
      FunctionResult result;
      result.func = func;
      result.graph = std::move(graph);
      results.push_back(std::move(result));
    }
    for (FunctionResult &result : results) {
      RematProblem &problem = result.graph.problem;
      RematModel model(problem);
      result.before = model.evaluate(keepEverything(problem).choice);
      // With a budget the cap is never negative (which would mean "no
      // cap"): a slack beyond the budget leaves nothing, and the policy
      // says what the smallest reachable peak is.
      problem.arenaCap =
          budgetBytes
              ? std::max<int64_t>(0, *budgetBytes - weightsBytes - slack)
              : -1;
      problem.activationCap =
          activationFraction > 0
              ? static_cast<int64_t>(activationFraction *
                                     result.before.peakActivation)
              : -1;
      std::string note;
      std::optional<RematDecision> decision = decide(result.graph, note);
      if (!decision) {
        reportUnmeetable(result, budgetBytes, slack, weightsBytes, note);
        return signalPassFailure();
      }
      result.decision = std::move(*decision);
      result.after = model.evaluate(result.decision.choice);
      result.solverNote = note;
    }
    for (FunctionResult &result : results)
      rewrite(result.graph, result.decision, result.after);
    for (func::FuncOp func : funcs)
      scheduleUpdatesEarly(func);
    FailureOr<ModulePlan> plan = planModule(*work, funcs);
    if (failed(plan))
      return signalPassFailure();
    int64_t total = plan->weightsBytes + plan->arenaBytes;
    if (budgetBytes && total > *budgetBytes &&
        (policy == ::memfit::RematPolicy::None ||
         policy == ::memfit::RematPolicy::CheckpointLayers)) {
      // These policies do not look at the budget: deciding again changes
      // nothing.
      mlir::emitError(module.getLoc())
          << "memfit-remat: policy " << ::memfit::nameOf(policy.getValue())
          << " needs "
          << formatBytes(total) << " (" << total << " bytes: weights "
          << plan->weightsBytes << " + arena " << plan->arenaBytes
          << "), over the budget of " << formatBytes(*budgetBytes) << " ("
          << *budgetBytes << " bytes); policy auto or optimal fits the "
          << "budget, or give a larger one";
      return signalPassFailure();
    }
    if (budgetBytes && total > *budgetBytes) {
      // A new decision may overshoot again by as much: grow geometrically.
      slack = 2 * slack + (total - *budgetBytes);
      continue;
    }
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    // The copy becomes the module.
    module.getBodyRegion().takeBody(work->getBodyRegion());
    for (FunctionResult &result : results)
      result.func = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          module, result.func.getSymNameAttr());
    RematOutputOptions outputs;
    outputs.budget = budgetBytes.value_or(0);
    outputs.activationFraction = activationFraction;
    outputs.report = report;
    outputs.reportRows = reportRows;
    outputs.timeline = timeline;
    outputs.timelineData = timelineData;
    if (failed(writeRematOutputs(module, results, weightsBytes, *plan, seconds,
                                 outputs)))
      return signalPassFailure();
    return;
  }
  mlir::emitError(module.getLoc())
      << "memfit-remat: budget " << formatBytes(*budgetBytes)
      << " cannot be met: the arena's first-fit placement keeps needing "
      << formatBytes(slack) << " more than the live bytes it holds; give a "
      << "budget that much larger";
  signalPassFailure();
}

/// The error for caps that no plan meets, with the smallest peak that the
/// greedy evictions and the layer checkpoints reach.
void MemfitRematPass::reportUnmeetable(const FunctionResult &result,
                                       std::optional<int64_t> budgetBytes,
                                       int64_t slack, int64_t weightsBytes,
                                       StringRef note) {
  const RematProblem &problem = result.graph.problem;
  RematEvaluation lowest = lowestPeak(problem);
  InFlightDiagnostic diag =
      mlir::emitError(func::FuncOp(result.func)->getLoc());
  diag << "memfit-remat: ";
  if (budgetBytes)
    diag << "budget " << formatBytes(*budgetBytes) << " (" << *budgetBytes
         << " bytes)";
  if (budgetBytes && problem.activationCap >= 0)
    diag << " with ";
  if (problem.activationCap >= 0)
    diag << "activation-fraction " << activationFraction;
  diag << " cannot be met by policy " << ::memfit::nameOf(policy.getValue())
       << ": the smallest peak reachable is "
       << formatBytes(weightsBytes + lowest.peakArena) << " ("
       << weightsBytes + lowest.peakArena << " bytes: weights "
       << formatBytes(weightsBytes) << " + arena "
       << formatBytes(lowest.peakArena) << ", activations "
       << formatBytes(lowest.peakActivation) << ")";
  if (slack > 0)
    diag << " in live bytes, but the memory planner's placement needed "
         << formatBytes(slack) << " (" << slack
         << " bytes) more than the live bytes at this budget: ask for about "
         << formatBytes(weightsBytes + lowest.peakArena + slack) << " ("
         << weightsBytes + lowest.peakArena + slack << " bytes)";
  if (!note.empty())
    diag << "; " << note;
}
