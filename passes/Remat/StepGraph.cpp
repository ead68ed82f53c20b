//===- StepGraph.cpp - memfit-remat's view of a training step -------------===//
//
// The graph memfit-remat decides on (StepGraph.h): the schedule of one
// training function split into forward and backward steps, its candidates
// (forward steps the backward reads) with their bytes, costs, inputs,
// backward reads and layers, and, where saved values may be compressed or
// offloaded, what that takes and costs.
//
//===----------------------------------------------------------------------===//

#include "StepGraph.h"

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::remat;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// Bytes a buffer takes in the arena: the planner aligns every offset.
static int64_t arenaBytes(Value value) {
  return alignToPlan(tensorBytes(cast<RankedTensorType>(value.getType())));
}

/// The codes and absmax types of `value` saved compressed.
std::pair<RankedTensorType, RankedTensorType>
remat::compressedTypes(Value value, int64_t blockSize) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t n = type.getNumElements();
  MLIRContext *context = value.getContext();
  return {RankedTensorType::get({n}, IntegerType::get(context, 8)),
          RankedTensorType::get({(n + blockSize - 1) / blockSize},
                                Float32Type::get(context))};
}

/// Whether `op` is, or is a kernel around, an op of class Attention.
static bool isAttention(Operation *op) {
  auto isClass = [](Operation *o) {
    auto opClass = dyn_cast<OpClassInterface>(o);
    return opClass && opClass.getOpClass() == OpClass::Attention;
  };
  if (auto kernel = dyn_cast_or_null<KernelOp>(op))
    return llvm::any_of(kernel.getBodyOps(),
                        [&](Operation &inner) { return isClass(&inner); });
  return op && isClass(op);
}

/// Whether a result can be saved compressed: a float tensor of at least
/// one block that attention neither computes nor reads. Attention's
/// backward recomputes the probabilities from the queries, the keys and
/// the saved log-sum-exp, and takes each row's delta from the result:
/// rounded apart, they no longer agree (a row's probabilities stop summing
/// to one, and the gradients that are zero by symmetry, such as a key
/// bias's, are not).
static bool isCompressible(Value value, int64_t blockSize) {
  auto type = cast<RankedTensorType>(value.getType());
  return isa<FloatType>(type.getElementType()) && type.hasStaticShape() &&
         type.getNumElements() >= blockSize &&
         !isAttention(value.getDefiningOp()) &&
         llvm::none_of(value.getUsers(), isAttention);
}

/// Sets what saving candidate `c` compressed takes and costs: the results
/// that the backward reads and that can be compressed are, the others
/// stay whole.
static void priceCompression(StepGraph &graph, int c,
                             ArrayRef<unsigned> backwardResults) {
  CandidateOp &info = graph.ops[c];
  RematCandidate &cand = graph.problem.candidates[c];
  int64_t blockSize = graph.compression->blockSize;
  int64_t bytes = 0;
  if (graph.compression->offload) {
    // Offloaded: the results the backward reads leave the device; each
    // copy moves them over the bus once.
    for (OpResult result : info.op->getResults()) {
      if (!llvm::is_contained(backwardResults, result.getResultNumber())) {
        bytes += arenaBytes(result);
        continue;
      }
      info.compressedResults.push_back(result.getResultNumber());
      int64_t whole = tensorBytes(cast<RankedTensorType>(result.getType()));
      info.compressCost += OpCost{0, 2 * whole};
      info.decompressCost += OpCost{0, 2 * whole};
    }
    if (info.compressedResults.empty())
      return;
    cand.compressedBytes = bytes;
    cand.compressCost =
        double(info.compressCost.bytes) / 2 * graph.compression->busCost;
    cand.decompressCost =
        double(info.decompressCost.bytes) / 2 * graph.compression->busCost;
    return;
  }
  for (OpResult result : info.op->getResults()) {
    if (!llvm::is_contained(backwardResults, result.getResultNumber()) ||
        !isCompressible(result, blockSize)) {
      bytes += arenaBytes(result);
      continue;
    }
    info.compressedResults.push_back(result.getResultNumber());
    auto [codes, absmax] = compressedTypes(result, blockSize);
    int64_t stored =
        alignToPlan(tensorBytes(codes)) + alignToPlan(tensorBytes(absmax));
    bytes += stored;
    int64_t n = codes.getNumElements();
    int64_t whole = tensorBytes(cast<RankedTensorType>(result.getType()));
    int64_t moved = whole + tensorBytes(codes) + tensorBytes(absmax);
    // The flops of memfit.quantize and memfit.dequantize per element.
    info.compressCost += OpCost{10 * n, moved};
    info.decompressCost += OpCost{n, moved};
  }
  if (info.compressedResults.empty())
    return;
  cand.compressedBytes = bytes;
  cand.compressCost =
      double(info.compressCost.flops) + double(info.compressCost.bytes);
  cand.decompressCost =
      double(info.decompressCost.flops) + double(info.decompressCost.bytes);
}

//===----------------------------------------------------------------------===//
// The graph of a training step
//===----------------------------------------------------------------------===//

/// Adds the candidate for the forward step `op` at index `step`, with its
/// cost and name; `returned`/`assigned` say whether the step's results
/// leave it. Returns its index.
static int addCandidate(StepGraph &graph, Operation *op, int step,
                        int64_t bytes, int lastForwardUse, bool returned,
                        bool assigned) {
  RematCandidate c;
  CandidateOp info;
  info.op = op;
  info.cost = estimateCost(op);
  c.forwardStep = step;
  c.bytes = bytes;
  // What recomputing it once costs: FLOPs + bytes moved.
  c.cost = double(info.cost.flops) + double(info.cost.bytes);
  c.lastForwardUse = lastForwardUse;
  if (returned || assigned) {
    c.recomputable = false;
    info.why = returned ? "a result of the step" : "it updates a parameter";
  }
  StringRef node = stepNodeName(op);
  info.name = node.empty()
                  ? llvm::formatv("{0}@{1}", stepOpNames(op), step).str()
                  : node.str();
  int index = graph.ops.size();
  graph.candidateOf[op] = index;
  graph.problem.candidates.push_back(std::move(c));
  graph.ops.push_back(std::move(info));
  return index;
}

/// The parameter that `value` reads: the load at its buffer's root, or
/// the one behind ZeRO stage 3's gather of a parameter's rows (through the
/// kernel that casts the rows before it). The gather counts as the
/// parameter, not as a producer to inherit a layer from: it may be placed
/// a layer ahead of its readers (memfit-optimizer's prefetch).
static LoadParameterOp parameterRead(Value value) {
  Operation *def = bufferRoot(value).getDefiningOp();
  if (!def || !def->hasAttr(kRegatherAttr))
    return dyn_cast_or_null<LoadParameterOp>(def);
  Operation *rows = bufferRoot(def->getOperand(0)).getDefiningOp();
  if (auto kernel = dyn_cast_or_null<KernelOp>(rows);
      kernel && kernel.getInputs().size() == 1)
    rows = bufferRoot(kernel.getInputs().front()).getDefiningOp();
  return dyn_cast_or_null<LoadParameterOp>(rows);
}

/// The layer of every forward step: from the ONNX node name; else from the
/// node's module scope when the exporter recorded one (a scope without a
/// layer index is outside the layers); else from the parameters a step
/// reads (parameterRead); a step with none of these inherits the layer of
/// its latest forward producer. Sets each candidate's layer and whether it
/// is a layer's input (a forward step of another layer reads it).
static void assignLayers(StepGraph &graph,
                         const DenseMap<Operation *, int> &stepOf) {
  int numForward = graph.numForward();
  SmallVector<int> layerOfStep(numForward, kOutsideLayers);
  for (int s = 0; s < numForward; ++s) {
    Operation *op = graph.steps[s];
    int layer = layerIndex(stepNodeName(op));
    if (StringRef scope = stepScope(op); layer < 0 && !scope.empty()) {
      layer = layerIndex(scope);
      layerOfStep[s] = layer < 0 ? kOutsideLayers : layer;
      continue;
    }
    bool readsParameter = false;
    int latestProducer = -1;
    for (Value operand : op->getOperands()) {
      Value root = bufferRoot(operand);
      if (LoadParameterOp load = parameterRead(operand)) {
        readsParameter = true;
        if (layer < 0)
          layer = std::max(layer, layerIndex(load.getName()));
      } else if (Operation *def = root.getDefiningOp()) {
        auto it = stepOf.find(def);
        if (it != stepOf.end() && it->second < s)
          latestProducer = std::max(latestProducer, it->second);
      }
    }
    if (layer < 0 && !readsParameter && latestProducer >= 0)
      layer = layerOfStep[latestProducer];
    layerOfStep[s] = layer < 0 ? kOutsideLayers : layer;
  }
  for (auto [c, info] : llvm::zip(graph.problem.candidates, graph.ops)) {
    c.layer = layerOfStep[c.forwardStep];
    if (c.layer == kOutsideLayers)
      continue;
    for (Value result : info.op->getResults()) {
      SmallVector<Operation *> readers;
      collectViewReaders(result, readers);
      for (Operation *reader : readers) {
        auto it = stepOf.find(reader);
        if (it == stepOf.end() || it->second >= numForward)
          continue; // a backward reader
        if (layerOfStep[it->second] != c.layer)
          c.layerInput = true;
      }
    }
  }
}

StepGraph remat::buildStepGraph(func::FuncOp func,
                                std::optional<Compression> compression) {
  StepGraph graph;
  graph.func = func;
  graph.compression = compression;
  RematProblem &problem = graph.problem;
  Block &body = func.getBody().front();
  for (Operation &op : body)
    if (isScheduledStep(&op))
      graph.steps.push_back(&op);
  int numSteps = graph.steps.size();
  int numForward = numSteps;
  for (auto [index, op] : llvm::enumerate(graph.steps))
    if (isBackwardStep(op)) {
      numForward = index;
      break;
    }
  problem.numForwardSteps = numForward;
  problem.numBackwardSteps = numSteps - numForward;
  // An offloaded value's copy back is issued a step early, so that it runs
  // on the copy queue beside that step.
  problem.fetchAhead = compression && compression->offload ? 1 : 0;
  DenseMap<Operation *, int> stepOf;
  for (auto [index, op] : llvm::enumerate(graph.steps))
    stepOf[op] = index;

  // Arena values: step results that no assign stores, and inputs. Each
  // gets a fixed live range [first, last] over the steps; candidates get
  // theirs from the decision instead.
  auto readersOf = [&](Value value, int &lastStep, bool &returned,
                       bool &assigned, SmallVectorImpl<int> &steps) {
    SmallVector<Operation *> readers;
    collectBufferReaders(value, readers);
    for (Operation *reader : readers) {
      if (isa<func::ReturnOp>(reader))
        returned = true;
      else if (isa<AssignOp>(reader))
        assigned = true;
      else if (auto it = stepOf.find(reader); it != stepOf.end()) {
        steps.push_back(it->second);
        lastStep = std::max(lastStep, it->second);
      }
    }
  };

  problem.fixedForward.assign(numForward, 0);
  problem.fixedBackward.assign(numSteps - numForward, 0);
  SmallVector<int64_t> fixed(numSteps + 1, 0); // difference array
  auto addFixed = [&](int first, int last, int64_t bytes) {
    if (last < first)
      return;
    fixed[first] += bytes;
    fixed[last + 1] -= bytes;
  };
  for (BlockArgument arg : body.getArguments())
    addFixed(0, numSteps - 1, arenaBytes(arg));

  for (auto [index, op] : llvm::enumerate(graph.steps)) {
    int step = index;
    graph.stepFlops += estimateCost(op).flops;
    int64_t bytes = 0;
    int lastUse = step, lastForwardUse = step;
    bool returned = false, assigned = false;
    SmallVector<int> backwardReads;
    SmallVector<unsigned> backwardResults; // the results the backward reads
    for (OpResult result : op->getResults()) {
      SmallVector<int> readerSteps;
      bool resultAssigned = false;
      readersOf(result, lastUse, returned, resultAssigned, readerSteps);
      assigned |= resultAssigned;
      // A result written in place into an input takes no bytes of its own:
      // the input's range runs to the result's last reader.
      if (!resultAssigned && bufferRoot(result) == result)
        bytes += arenaBytes(result);
      for (int reader : readerSteps) {
        if (reader < numForward) {
          lastForwardUse = std::max(lastForwardUse, reader);
        } else {
          backwardReads.push_back(reader - numForward);
          if (!llvm::is_contained(backwardResults, result.getResultNumber()))
            backwardResults.push_back(result.getResultNumber());
        }
      }
    }
    if (returned)
      lastUse = numSteps - 1;
    bool forward = step < numForward;
    if (!forward || backwardReads.empty()) {
      addFixed(step, lastUse, bytes);
      continue;
    }
    // A forward step the backward reads: a candidate.
    int c = addCandidate(graph, op, step, bytes, lastForwardUse, returned,
                         assigned);
    llvm::sort(backwardReads);
    backwardReads.erase(llvm::unique(backwardReads), backwardReads.end());
    problem.candidates[c].backwardReads.assign(backwardReads.begin(),
                                               backwardReads.end());
    if (compression && !returned && !assigned)
      priceCompression(graph, c, backwardResults);
    // The candidate's own forward live range is fixed.
    addFixed(step, lastForwardUse, bytes);
  }
  int64_t running = 0;
  for (int s = 0; s < numSteps; ++s) {
    running += fixed[s];
    if (s < numForward)
      problem.fixedForward[s] = running;
    else
      problem.fixedBackward[s - numForward] = running;
  }

  // Inputs of each candidate: a recomputation reads them. A forward value
  // that is not a candidate (the backward never reads it) is recomputed in
  // turn, so it becomes a candidate with no backward reads; values a
  // recomputation cannot get back (results of a non-forward step) pin it.
  for (unsigned i = 0; i < graph.ops.size(); ++i) {
    Operation *candidateOp = graph.ops[i].op;
    for (Value operand : candidateOp->getOperands()) {
      Value root = bufferRoot(operand);
      Operation *def = root.getDefiningOp();
      if (!def || isa<LoadParameterOp, ConstantOp>(def))
        continue;
      if (isa<ParameterOp>(def))
        continue;
      auto it = stepOf.find(def);
      if (it == stepOf.end() || it->second >= numForward) {
        problem.candidates[i].recomputable = false;
        graph.ops[i].why = "it reads a value made outside the forward pass";
        continue;
      }
      auto known = graph.candidateOf.find(def);
      int input;
      if (known != graph.candidateOf.end()) {
        input = known->second;
      } else {
        // A forward-only value: a candidate the backward does not read.
        int64_t extraBytes = 0;
        for (Value result : def->getResults())
          extraBytes += arenaBytes(result);
        int lastUse = it->second;
        bool returned = false, assigned = false;
        SmallVector<int> ignored;
        for (Value result : def->getResults())
          readersOf(result, lastUse, returned, assigned, ignored);
        input = addCandidate(graph, def, it->second, extraBytes, lastUse,
                             returned, assigned);
      }
      std::vector<int> &inputs = problem.candidates[i].inputs;
      if (!llvm::is_contained(inputs, input))
        inputs.push_back(input);
    }
  }
  assignLayers(graph, stepOf);
  return graph;
}

