//===- Remat.cpp - memfit-remat: save or recompute under a memory budget --===//
//
// The training step is a fixed schedule of kernels and contractions: the
// forward steps, then the backward steps and the parameter updates. Every
// forward step whose results the backward reads is a candidate: it is saved
// (its results stay live from the forward pass to their last backward use)
// or recomputed (cloned into the backward just before the first backward
// step that needs it, from saved values, parameters and inputs). The pass
// first moves every parameter update to just after its gradient is final,
// then picks the candidates to recompute with a policy, rewrites the
// function and plans its memory again to check the budget on the real
// order. See docs/remat.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/MemoryTimeline.h"
#include "memfit/Analysis/RematProblem.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/OpCost.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITREMATPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// "512MiB", "1.5GiB", "800MB", "123456" (bytes).
static std::optional<int64_t> parseBytes(StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() &&
         (llvm::isDigit(text[digits]) || text[digits] == '.'))
    ++digits;
  double number;
  if (digits == 0 || text.take_front(digits).getAsDouble(number))
    return std::nullopt;
  StringRef unit = text.drop_front(digits).trim();
  double scale;
  if (unit.empty() || unit.equals_insensitive("b"))
    scale = 1;
  else if (unit.equals_insensitive("kib") || unit.equals_insensitive("k"))
    scale = 1024.0;
  else if (unit.equals_insensitive("mib") || unit.equals_insensitive("m"))
    scale = 1024.0 * 1024;
  else if (unit.equals_insensitive("gib") || unit.equals_insensitive("g"))
    scale = 1024.0 * 1024 * 1024;
  else if (unit.equals_insensitive("kb"))
    scale = 1e3;
  else if (unit.equals_insensitive("mb"))
    scale = 1e6;
  else if (unit.equals_insensitive("gb"))
    scale = 1e9;
  else
    return std::nullopt;
  return static_cast<int64_t>(std::llround(number * scale));
}

static std::string formatBytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (std::abs(b) >= 1024.0 * 1024 * 1024)
    return llvm::formatv("{0:F2} GiB", b / (1024.0 * 1024 * 1024)).str();
  if (std::abs(b) >= 1024.0 * 1024)
    return llvm::formatv("{0:F2} MiB", b / (1024.0 * 1024)).str();
  if (std::abs(b) >= 1024.0)
    return llvm::formatv("{0:F1} KiB", b / 1024.0).str();
  return llvm::formatv("{0} B", bytes).str();
}

static std::string formatFlops(double flops) {
  if (flops >= 1e9)
    return llvm::formatv("{0:F2} GFLOP", flops / 1e9).str();
  if (flops >= 1e6)
    return llvm::formatv("{0:F2} MFLOP", flops / 1e6).str();
  if (flops >= 1e3)
    return llvm::formatv("{0:F1} kFLOP", flops / 1e3).str();
  return llvm::formatv("{0:F0} FLOP", flops).str();
}

/// Bytes a buffer takes in the arena: the planner aligns every offset.
static int64_t arenaBytes(Value value) {
  return alignToPlan(tensorBytes(cast<RankedTensorType>(value.getType())));
}

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
// The graph of a training step
//===----------------------------------------------------------------------===//

namespace {

/// Where a candidate stands in the layered structure of the model.
constexpr int kOutsideLayers = -1;
/// The work auto's local search may do per starting plan, in candidates and
/// steps visited by plan evaluations (an evaluation visits each once): about
/// 27,000 evaluations on a 2-layer fixture, 5,300 at 12 layers.
constexpr int64_t kLocalSearchWork = 10'000'000;
/// How many perturbations auto's iterated local search tries at most.
constexpr int kLocalSearchRounds = 2000;

struct Candidate {
  Operation *op = nullptr;
  int step = 0; // forward step
  int64_t bytes = 0;
  OpCost cost;
  double price = 0; // what recomputing it once costs: FLOPs + bytes
  int lastForwardUse = 0;
  SmallVector<int> inputs;        // candidates it reads
  SmallVector<int> backwardReads; // backward steps that read it, ascending
  int layer = kOutsideLayers;
  bool recomputable = true;
  std::string why; // why it cannot be recomputed
  std::string name;
};

/// The schedule of one function and its candidates.
struct StepGraph {
  func::FuncOp func;
  SmallVector<Operation *> steps;
  int numForward = 0; // steps [0, numForward) are forward
  SmallVector<Candidate> candidates;
  DenseMap<Operation *, int> candidateOf;
  SmallVector<SmallVector<int>> backwardReadsOf; // per backward step
  SmallVector<int64_t> fixedForward, fixedBackward;
  double stepFlops = 0; // FLOPs of the whole step before remat
  bool hasLayers = false;
  DenseMap<Operation *, int> stepOf;
  SmallVector<int> layerOfStep; // per forward step

  int numBackward() const { return steps.size() - numForward; }
};

/// The index of a transformer layer in a name such as "h.3.attn.weight",
/// "/layers.1/mlp/MatMul" or "encoder.layer.0.attention", or -1.
int layerIndex(StringRef name) {
  static llvm::Regex pattern(
      "(^|[./_:])(h|layer|layers|block|blocks|blk)[._]?([0-9]+)([./_:]|$)");
  SmallVector<StringRef> groups;
  if (!pattern.match(name, &groups))
    return -1;
  int index;
  if (groups[3].getAsInteger(10, index))
    return -1;
  return index;
}

/// A candidate for the forward step `op` at index `step`, with its cost and
/// name; `returned`/`assigned` say whether the step's results leave it.
Candidate makeCandidate(Operation *op, int step, int64_t bytes,
                        int lastForwardUse, bool returned, bool assigned) {
  Candidate c;
  c.op = op;
  c.step = step;
  c.bytes = bytes;
  c.cost = estimateCost(op);
  c.price = double(c.cost.flops) + double(c.cost.bytes);
  c.lastForwardUse = lastForwardUse;
  if (returned || assigned) {
    c.recomputable = false;
    c.why = returned ? "a result of the step" : "it updates a parameter";
  }
  StringRef node = stepNodeName(op);
  c.name = node.empty()
               ? llvm::formatv("{0}@{1}", stepOpNames(op), step).str()
               : node.str();
  return c;
}

FailureOr<StepGraph> buildStepGraph(func::FuncOp func) {
  StepGraph graph;
  graph.func = func;
  Block &body = func.getBody().front();
  for (Operation &op : body)
    if (isScheduledStep(&op))
      graph.steps.push_back(&op);
  int numSteps = graph.steps.size();
  graph.numForward = numSteps;
  for (auto [index, op] : llvm::enumerate(graph.steps))
    if (isBackwardStep(op)) {
      graph.numForward = index;
      break;
    }
  DenseMap<Operation *, int> &stepOf = graph.stepOf;
  for (auto [index, op] : llvm::enumerate(graph.steps))
    stepOf[op] = index;

  // Arena values: step results that no assign stores, and inputs. Each
  // gets a fixed live range [first, last] over the steps; candidates get
  // theirs from the decision instead.
  auto readersOf = [&](Value value, int &lastStep, bool &returned,
                       bool &assigned, SmallVectorImpl<int> &steps) {
    SmallVector<Operation *> readers;
    collectViewReaders(value, readers);
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

  graph.fixedForward.assign(graph.numForward, 0);
  graph.fixedBackward.assign(numSteps - graph.numForward, 0);
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
    for (Value result : op->getResults()) {
      SmallVector<int> readerSteps;
      bool resultAssigned = false;
      readersOf(result, lastUse, returned, resultAssigned, readerSteps);
      assigned |= resultAssigned;
      if (!resultAssigned)
        bytes += arenaBytes(result);
      for (int reader : readerSteps) {
        if (reader < graph.numForward)
          lastForwardUse = std::max(lastForwardUse, reader);
        else
          backwardReads.push_back(reader - graph.numForward);
      }
    }
    if (returned)
      lastUse = numSteps - 1;
    bool forward = step < graph.numForward;
    if (!forward || backwardReads.empty()) {
      addFixed(step, lastUse, bytes);
      continue;
    }
    // A forward step the backward reads: a candidate.
    Candidate c =
        makeCandidate(op, step, bytes, lastForwardUse, returned, assigned);
    llvm::sort(backwardReads);
    backwardReads.erase(llvm::unique(backwardReads), backwardReads.end());
    c.backwardReads.assign(backwardReads.begin(), backwardReads.end());
    // The candidate's own forward live range is fixed.
    addFixed(step, lastForwardUse, bytes);
    graph.candidateOf[op] = graph.candidates.size();
    graph.candidates.push_back(std::move(c));
  }
  int64_t running = 0;
  for (int s = 0; s < numSteps; ++s) {
    running += fixed[s];
    if (s < graph.numForward)
      graph.fixedForward[s] = running;
    else
      graph.fixedBackward[s - graph.numForward] = running;
  }

  // Inputs of each candidate: a recomputation reads them. A forward value
  // that is not a candidate (the backward never reads it) is recomputed in
  // turn, so it becomes a candidate with no backward reads; values a
  // recomputation cannot get back (results of a non-forward step) pin it.
  graph.backwardReadsOf.assign(graph.numBackward(), {});
  for (unsigned i = 0; i < graph.candidates.size(); ++i) {
    Operation *candidateOp = graph.candidates[i].op;
    for (Value operand : candidateOp->getOperands()) {
      Value root = bufferRoot(operand);
      Operation *def = root.getDefiningOp();
      if (!def || isa<LoadParameterOp, ConstantOp>(def))
        continue;
      if (isa<ParameterOp>(def))
        continue;
      auto it = stepOf.find(def);
      if (it == stepOf.end() || it->second >= graph.numForward) {
        graph.candidates[i].recomputable = false;
        graph.candidates[i].why = "it reads a value made outside the forward "
                                  "pass";
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
        Candidate extra = makeCandidate(def, it->second, extraBytes, lastUse,
                                        returned, assigned);
        input = graph.candidates.size();
        graph.candidateOf[def] = input;
        graph.candidates.push_back(std::move(extra));
      }
      auto &inputs = graph.candidates[i].inputs;
      if (!llvm::is_contained(inputs, input))
        inputs.push_back(input);
    }
  }
  for (auto [i, c] : llvm::enumerate(graph.candidates))
    for (int b : c.backwardReads)
      graph.backwardReadsOf[b].push_back(i);

  // Layers: from the ONNX node name; else from the node's module scope when
  // the exporter recorded one (a scope without a layer index is outside the
  // layers); else from the parameters a step reads; a step with none of
  // these inherits the layer of its latest forward producer.
  SmallVector<int> &layerOfStep = graph.layerOfStep;
  layerOfStep.assign(graph.numForward, kOutsideLayers);
  for (int s = 0; s < graph.numForward; ++s) {
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
      if (auto load = root.getDefiningOp<LoadParameterOp>()) {
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
  for (Candidate &c : graph.candidates) {
    c.layer = layerOfStep[c.step];
    graph.hasLayers |= c.layer != kOutsideLayers;
  }
  return graph;
}

//===----------------------------------------------------------------------===//
// Evaluating a decision
//===----------------------------------------------------------------------===//

struct Evaluation {
  SmallVector<int> recomputedAt; // backward step, or -1
  SmallVector<int> firstNeed;    // first backward step that needs it, or -1
  SmallVector<int> lastNeed;     // last backward step that needs it, or -1
  SmallVector<SmallVector<int>> recomputeAt; // per backward step, in order
  SmallVector<int64_t> forwardBytes, backwardBytes;
  SmallVector<int64_t> forwardActivation, backwardActivation;
  int64_t peakArena = 0;
  int64_t peakActivation = 0;
  int peakStep = 0; // over forward then backward steps
  double price = 0;
  double flops = 0;
  int64_t bytesMoved = 0;
};

/// The memory and cost of recomputing the candidates in `evicted`, under
/// the model of RematProblem.h.
Evaluation evaluate(const StepGraph &graph, ArrayRef<char> evicted) {
  int nC = graph.candidates.size();
  int nF = graph.numForward, nB = graph.numBackward();
  Evaluation ev;
  ev.recomputedAt.assign(nC, -1);
  ev.firstNeed.assign(nC, -1);
  ev.lastNeed.assign(nC, -1);
  ev.recomputeAt.assign(nB, {});
  // Marks `c` as needed at backward step b, recomputing it (and what it
  // reads) first when it is evicted.
  std::function<void(int, int)> need = [&](int c, int b) {
    if (ev.firstNeed[c] < 0)
      ev.firstNeed[c] = b;
    ev.lastNeed[c] = std::max(ev.lastNeed[c], b);
    if (!evicted[c] || ev.recomputedAt[c] >= 0)
      return;
    for (int input : graph.candidates[c].inputs)
      need(input, b);
    ev.recomputedAt[c] = b;
    ev.recomputeAt[b].push_back(c);
  };
  for (int b = 0; b < nB; ++b)
    for (int c : graph.backwardReadsOf[b])
      need(c, b);

  SmallVector<int64_t> fwd(nF + 1, 0), bwd(nB + 1, 0), fwdAct(nF + 1, 0),
      bwdAct(nB + 1, 0);
  // The recomputations before step b run one after another: a value that
  // only later recomputations of the same slot read is freed after its last
  // reader there (transient); the others stay live through step b and on.
  SmallVector<char> transient(nC, 0);
  SmallVector<int64_t> slotExtra(nB, 0);
  for (int b = 0; b < nB; ++b) {
    ArrayRef<int> slot = ev.recomputeAt[b];
    if (slot.empty())
      continue;
    DenseMap<int, int> position;
    for (auto [k, c] : llvm::enumerate(slot))
      position[c] = k;
    SmallVector<int> lastReader(slot.size(), -1);
    for (auto [k, c] : llvm::enumerate(slot))
      for (int input : graph.candidates[c].inputs)
        if (auto it = position.find(input); it != position.end())
          lastReader[it->second] = std::max<int>(lastReader[it->second], k);
    int64_t persistent = 0, worst = 0;
    SmallVector<int64_t> delta(slot.size() + 1, 0);
    for (auto [k, c] : llvm::enumerate(slot)) {
      bool readHere = llvm::is_contained(graph.backwardReadsOf[b], c);
      if (!readHere && ev.lastNeed[c] == b && lastReader[k] >= 0) {
        transient[c] = 1;
        delta[k] += graph.candidates[c].bytes;
        delta[lastReader[k] + 1] -= graph.candidates[c].bytes;
      } else {
        delta[k] += graph.candidates[c].bytes;
        persistent += graph.candidates[c].bytes;
      }
    }
    int64_t live = 0;
    for (size_t k = 0; k < slot.size(); ++k) {
      live += delta[k];
      worst = std::max(worst, live);
    }
    slotExtra[b] = std::max<int64_t>(0, worst - persistent);
  }
  for (int c = 0; c < nC; ++c) {
    const Candidate &cand = graph.candidates[c];
    if (ev.lastNeed[c] < 0)
      continue;
    if (ev.recomputedAt[c] >= 0 && transient[c]) {
      ev.price += cand.price;
      ev.flops += cand.cost.flops;
      ev.bytesMoved += cand.cost.bytes;
      continue;
    }
    if (ev.recomputedAt[c] >= 0) {
      bwd[ev.recomputedAt[c]] += cand.bytes;
      bwd[ev.lastNeed[c] + 1] -= cand.bytes;
      bwdAct[ev.recomputedAt[c]] += cand.bytes;
      bwdAct[ev.lastNeed[c] + 1] -= cand.bytes;
      ev.price += cand.price;
      ev.flops += cand.cost.flops;
      ev.bytesMoved += cand.cost.bytes;
      continue;
    }
    // Kept: held past its forward uses into the backward.
    if (cand.lastForwardUse + 1 < nF) {
      fwd[cand.lastForwardUse + 1] += cand.bytes;
      fwd[nF] -= cand.bytes;
    }
    fwdAct[cand.step] += cand.bytes;
    fwdAct[nF] -= cand.bytes;
    bwd[0] += cand.bytes;
    bwd[ev.lastNeed[c] + 1] -= cand.bytes;
    bwdAct[0] += cand.bytes;
    bwdAct[ev.lastNeed[c] + 1] -= cand.bytes;
  }
  ev.forwardBytes.resize(nF);
  ev.forwardActivation.resize(nF);
  ev.backwardBytes.resize(nB);
  ev.backwardActivation.resize(nB);
  int64_t run = 0, act = 0;
  for (int t = 0; t < nF; ++t) {
    run += fwd[t];
    act += fwdAct[t];
    ev.forwardBytes[t] = graph.fixedForward[t] + run;
    ev.forwardActivation[t] = act;
    if (ev.forwardBytes[t] > ev.peakArena) {
      ev.peakArena = ev.forwardBytes[t];
      ev.peakStep = t;
    }
    ev.peakActivation = std::max(ev.peakActivation, act);
  }
  run = act = 0;
  for (int b = 0; b < nB; ++b) {
    run += bwd[b];
    act += bwdAct[b];
    ev.backwardBytes[b] = graph.fixedBackward[b] + run + slotExtra[b];
    ev.backwardActivation[b] = act + slotExtra[b];
    if (ev.backwardBytes[b] > ev.peakArena) {
      ev.peakArena = ev.backwardBytes[b];
      ev.peakStep = nF + b;
    }
    ev.peakActivation = std::max(ev.peakActivation, act);
  }
  return ev;
}

struct Limits {
  int64_t arenaCap = -1;      // < 0: none
  int64_t activationCap = -1; // < 0: none
  bool fits(const Evaluation &ev) const {
    return (arenaCap < 0 || ev.peakArena <= arenaCap) &&
           (activationCap < 0 || ev.peakActivation <= activationCap);
  }
};

//===----------------------------------------------------------------------===//
// Policies
//===----------------------------------------------------------------------===//

struct Decision {
  SmallVector<char> evicted;
  std::string policy; // what produced it
  SmallVector<std::string> keptWhy; // per candidate, when the policy says
};

/// checkpoint-layers: keep what crosses a layer boundary and what is outside
/// the layers, recompute the inside of every layer. Without layers, keep
/// every ceil(sqrt(n))-th cut of the forward chain and recompute between.
Decision checkpointLayers(const StepGraph &graph) {
  int nC = graph.candidates.size();
  Decision d;
  d.policy = "checkpoint-layers";
  d.evicted.assign(nC, 0);
  d.keptWhy.assign(nC, "");
  if (graph.hasLayers) {
    for (int i = 0; i < nC; ++i) {
      const Candidate &c = graph.candidates[i];
      if (c.layer == kOutsideLayers) {
        d.keptWhy[i] = "outside the transformer layers";
        continue;
      }
      // Read by a forward step of another layer: a layer's input.
      bool crosses = false;
      for (Value result : c.op->getResults()) {
        SmallVector<Operation *> readers;
        collectViewReaders(result, readers);
        for (Operation *reader : readers) {
          auto it = graph.stepOf.find(reader);
          if (it == graph.stepOf.end() || it->second >= graph.numForward)
            continue; // a backward reader
          if (graph.layerOfStep[it->second] != c.layer)
            crosses = true;
        }
      }
      if (crosses) {
        d.keptWhy[i] = llvm::formatv("the output of layer {0}, an input of "
                                     "the next",
                                     c.layer)
                           .str();
        continue;
      }
      d.evicted[i] = c.recomputable;
    }
    return d;
  }
  // A plain chain: cuts are candidates that no earlier value skips over.
  SmallVector<int> order(nC);
  for (int i = 0; i < nC; ++i)
    order[i] = i;
  llvm::sort(order, [&](int a, int b) {
    return graph.candidates[a].step < graph.candidates[b].step;
  });
  SmallVector<int> cuts;
  int reach = -1;
  for (int i : order) {
    const Candidate &c = graph.candidates[i];
    if (reach <= c.step && c.recomputable)
      cuts.push_back(i);
    reach = std::max(reach, c.lastForwardUse);
  }
  int stride = std::max<int>(1, std::ceil(std::sqrt(double(cuts.size()))));
  llvm::DenseSet<int> kept;
  for (size_t k = 0; k < cuts.size(); k += stride)
    kept.insert(cuts[k]);
  for (int i = 0; i < nC; ++i) {
    if (kept.contains(i))
      d.keptWhy[i] = llvm::formatv("a segment boundary (every {0} of {1} "
                                   "cuts of the chain)",
                                   stride, cuts.size())
                         .str();
    else
      d.evicted[i] = graph.candidates[i].recomputable;
  }
  return d;
}

/// Price of the candidates that evicting `c` newly makes recomputed.
double evictionPrice(const StepGraph &graph, ArrayRef<char> evicted,
                     const Evaluation &ev, int c) {
  double price = 0;
  SmallVector<int> stack{c};
  llvm::DenseSet<int> seen;
  while (!stack.empty()) {
    int x = stack.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (ev.recomputedAt[x] >= 0)
      continue; // already recomputed, with its inputs
    price += graph.candidates[x].price;
    for (int input : graph.candidates[x].inputs)
      if (evicted[input])
        stack.push_back(input);
  }
  return price;
}

/// The candidates to evict next under `limits`, each with its score:
/// those still saved whose eviction lowers the step that most exceeds the
/// limits (the arena peak, else the activation peak), scored by the bytes
/// they free per unit of recomputation price. Skips `exclude` and
/// candidates whose eviction would bring the plan's price to `maxPrice` or
/// more.
SmallVector<std::pair<int, double>>
evictionChoices(const StepGraph &graph, const Limits &limits,
                ArrayRef<char> evicted, const Evaluation &ev, int exclude,
                double maxPrice, bool directFirst) {
  int nC = graph.candidates.size();
  int nF = graph.numForward;
  bool arena = limits.arenaCap >= 0 && ev.peakArena > limits.arenaCap;
  int worst = ev.peakStep;
  if (!arena) {
    int64_t best = -1;
    for (int t = 0; t < nF; ++t)
      if (ev.forwardActivation[t] > best)
        best = ev.forwardActivation[t], worst = t;
    for (int b = 0; b < graph.numBackward(); ++b)
      if (ev.backwardActivation[b] > best)
        best = ev.backwardActivation[b], worst = nF + b;
  }
  // First the candidates whose eviction lowers that step; when there are
  // none, or without `directFirst`, any candidate live there (its eviction
  // moves memory around, which can open new savings).
  SmallVector<std::pair<int, double>> choices;
  for (bool direct : {true, false}) {
    if (direct && !directFirst)
      continue;
    for (int c = 0; c < nC; ++c) {
      const Candidate &cand = graph.candidates[c];
      if (c == exclude || evicted[c] || !cand.recomputable ||
          ev.lastNeed[c] < 0)
        continue;
      // Evicting helps at a forward step past the candidate's forward
      // uses; at a backward step before its first need (it is recomputed
      // at its first need and live from there on); and at its last need
      // when only recomputations read it there (it is then freed within
      // the slot).
      int b = worst - nF;
      bool held =
          worst < nF
              ? (arena ? cand.lastForwardUse < worst && cand.step <= worst
                       : cand.step <= worst)
              : b < ev.firstNeed[c] ||
                    (b == ev.lastNeed[c] &&
                     !llvm::is_contained(graph.backwardReadsOf[b], c)) ||
                    (!direct && b <= ev.lastNeed[c]);
      if (!held)
        continue;
      double price = evictionPrice(graph, evicted, ev, c);
      if (ev.price + price >= maxPrice)
        continue;
      choices.push_back({c, double(cand.bytes) / (price + 1)});
    }
    if (!choices.empty())
      break;
  }
  return choices;
}

/// The best-scored of evictionChoices, or -1.
int pickEviction(const StepGraph &graph, const Limits &limits,
                 ArrayRef<char> evicted, const Evaluation &ev, int exclude,
                 double maxPrice, bool directFirst = true) {
  int choice = -1;
  double bestScore = -1;
  for (auto [c, score] : evictionChoices(graph, limits, evicted, ev, exclude,
                                         maxPrice, directFirst))
    if (score > bestScore)
      bestScore = score, choice = c;
  return choice;
}

/// Greedy: while the limits are exceeded, evict what pickEviction chooses;
/// then keep again, most expensive first, every candidate the limits allow.
/// Records the lowest peak seen in `lowest` (for "the smallest peak").
Decision greedy(const StepGraph &graph, const Limits &limits,
                Decision start, Evaluation *lowest, bool directFirst = true) {
  int nC = graph.candidates.size();
  Decision d = std::move(start);
  Evaluation ev = evaluate(graph, d.evicted);
  auto track = [&](const Evaluation &e) {
    if (lowest && e.peakArena < lowest->peakArena)
      *lowest = e;
  };
  track(ev);
  for (int iteration = 0; !limits.fits(ev) && iteration <= nC; ++iteration) {
    int choice = pickEviction(graph, limits, d.evicted, ev, -1,
                              std::numeric_limits<double>::infinity(),
                              directFirst);
    if (choice < 0)
      break;
    d.evicted[choice] = 1;
    ev = evaluate(graph, d.evicted);
    track(ev);
  }
  if (!limits.fits(ev))
    return d;
  // Keep again what the limits allow, the most expensive first.
  SmallVector<int> evictedList;
  for (int c = 0; c < nC; ++c)
    if (d.evicted[c])
      evictedList.push_back(c);
  llvm::stable_sort(evictedList, [&](int a, int b) {
    return graph.candidates[a].price > graph.candidates[b].price;
  });
  for (int c : evictedList) {
    d.evicted[c] = 0;
    Evaluation trial = evaluate(graph, d.evicted);
    if (limits.fits(trial) && trial.price <= ev.price)
      ev = std::move(trial);
    else
      d.evicted[c] = 1;
  }
  return d;
}

/// Local search from a plan that fits: keep one recomputed candidate again
/// and, when that breaks the limits, repair the plan with the cheapest
/// single eviction that fits, else by evicting others the way greedy does,
/// as long as the repaired plan stays cheaper than the one it replaces. Accepts every improvement and sweeps the recomputed
/// candidates, most expensive first, until a sweep finds none or the
/// evaluation budget `evaluations` is spent (it counts down).
void improve(const StepGraph &graph, const Limits &limits, Decision &d,
             int64_t &evaluations) {
  int nC = graph.candidates.size();
  Evaluation ev = evaluate(graph, d.evicted);
  if (!limits.fits(ev))
    return;
  bool improved = true;
  while (improved && evaluations > 0) {
    improved = false;
    SmallVector<int> recomputed;
    for (int c = 0; c < nC; ++c)
      if (d.evicted[c] && ev.recomputedAt[c] >= 0)
        recomputed.push_back(c);
    llvm::stable_sort(recomputed, [&](int a, int b) {
      return graph.candidates[a].price > graph.candidates[b].price;
    });
    for (int keep : recomputed) {
      if (evaluations <= 0)
        break;
      if (!d.evicted[keep])
        continue;
      SmallVector<char> trial = d.evicted;
      trial[keep] = 0;
      Evaluation tev = evaluate(graph, trial);
      --evaluations;
      // The cheapest single eviction that repairs it, else greedy ones.
      if (!limits.fits(tev) && tev.price < ev.price) {
        int bestRepair = -1;
        double bestPrice = ev.price;
        for (auto [c, score] : evictionChoices(graph, limits, trial, tev, keep,
                                               ev.price, true)) {
          if (evaluations <= 0)
            break;
          trial[c] = 1;
          Evaluation repaired = evaluate(graph, trial);
          --evaluations;
          trial[c] = 0;
          if (limits.fits(repaired) && repaired.price < bestPrice)
            bestPrice = repaired.price, bestRepair = c;
        }
        if (bestRepair >= 0) {
          trial[bestRepair] = 1;
          tev = evaluate(graph, trial);
          --evaluations;
        }
      }
      while (!limits.fits(tev) && tev.price < ev.price && evaluations > 0) {
        int evict = pickEviction(graph, limits, trial, tev, keep, ev.price);
        if (evict < 0)
          break;
        trial[evict] = 1;
        tev = evaluate(graph, trial);
        --evaluations;
      }
      if (limits.fits(tev) && tev.price < ev.price) {
        d.evicted = std::move(trial);
        ev = std::move(tev);
        improved = true;
      }
    }
  }
}

/// Iterated local search from a plan that fits: improve it, then
/// repeatedly keep a few random recomputed candidates of the best plan
/// again, repair with greedy evictions, improve, and keep the result when
/// it is cheaper. Deterministic (fixed seed); bounded by kLocalSearchWork.
void search(const StepGraph &graph, const Limits &limits, Decision &d) {
  int64_t evaluations =
      kLocalSearchWork / (graph.candidates.size() + graph.steps.size());
  improve(graph, limits, d, evaluations);
  Evaluation best = evaluate(graph, d.evicted);
  if (!limits.fits(best))
    return;
  int nC = graph.candidates.size();
  std::mt19937 random(0x6d656d66);
  for (int round = 0; evaluations > 0 && round < kLocalSearchRounds; ++round) {
    SmallVector<int> recomputed;
    for (int c = 0; c < nC; ++c)
      if (d.evicted[c] && best.recomputedAt[c] >= 0)
        recomputed.push_back(c);
    if (recomputed.empty())
      return;
    Decision trial = d;
    int kicks = 1 + round % std::min<int>(4, recomputed.size());
    for (int k = 0; k < kicks; ++k)
      trial.evicted[recomputed[random() % recomputed.size()]] = 0;
    Evaluation ev = evaluate(graph, trial.evicted);
    --evaluations;
    for (int i = 0; !limits.fits(ev) && i <= nC && evaluations > 0; ++i) {
      int evict = pickEviction(graph, limits, trial.evicted, ev, -1,
                               std::numeric_limits<double>::infinity());
      if (evict < 0)
        break;
      trial.evicted[evict] = 1;
      ev = evaluate(graph, trial.evicted);
      --evaluations;
    }
    if (!limits.fits(ev))
      continue;
    improve(graph, limits, trial, evaluations);
    ev = evaluate(graph, trial.evicted);
    if (limits.fits(ev) && ev.price < best.price) {
      d.evicted = std::move(trial.evicted);
      best = std::move(ev);
    }
  }
}

RematProblem makeProblem(const StepGraph &graph, const Limits &limits) {
  RematProblem problem;
  problem.numForwardSteps = graph.numForward;
  problem.numBackwardSteps = graph.numBackward();
  problem.fixedForward.assign(graph.fixedForward.begin(),
                              graph.fixedForward.end());
  problem.fixedBackward.assign(graph.fixedBackward.begin(),
                               graph.fixedBackward.end());
  // The solver may not recompute what cannot be: price it above every
  // other recomputation together.
  double unrecomputable = 1;
  for (const Candidate &c : graph.candidates)
    unrecomputable += std::max(c.price, 1.0);
  for (const Candidate &c : graph.candidates) {
    RematCandidate rc;
    rc.bytes = c.bytes;
    rc.cost = c.recomputable ? std::max(c.price, 1.0) : unrecomputable;
    rc.forwardStep = c.step;
    rc.lastForwardUse = c.lastForwardUse;
    rc.inputs.assign(c.inputs.begin(), c.inputs.end());
    rc.backwardReads.assign(c.backwardReads.begin(), c.backwardReads.end());
    problem.candidates.push_back(std::move(rc));
  }
  problem.arenaCap =
      limits.arenaCap >= 0 ? limits.arenaCap : std::numeric_limits<int64_t>::max() / 4;
  problem.activationCap = limits.activationCap;
  return problem;
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// The saved candidates a recomputation of `c` starts from, in the order
/// its inputs reach them: its inputs, through the inputs of those that are
/// recomputed too.
static void collectSources(const StepGraph &graph, const Evaluation &ev,
                           int c, llvm::SetVector<int> &sources) {
  for (int input : graph.candidates[c].inputs) {
    if (ev.recomputedAt[input] >= 0)
      collectSources(graph, ev, input, sources);
    else
      sources.insert(input);
  }
}

llvm::SetVector<int> recomputationSources(const StepGraph &graph,
                                          const Evaluation &ev, int c) {
  llvm::SetVector<int> sources;
  collectSources(graph, ev, c, sources);
  return sources;
}

/// Clones the recomputed candidates into the backward and points the
/// backward at the clones. Marks saved candidates with why.
void rewrite(StepGraph &graph, const Decision &d, const Evaluation &ev) {
  MLIRContext *context = graph.func.getContext();
  int nC = graph.candidates.size();
  int nF = graph.numForward;
  IRMapping mapping;
  llvm::DenseSet<Value> evictedValues;
  for (int c = 0; c < nC; ++c)
    if (ev.recomputedAt[c] >= 0)
      for (Value result : graph.candidates[c].op->getResults())
        evictedValues.insert(result);


  OpBuilder builder(context);
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
    builder.setInsertionPoint(reader);
    for (int c : ev.recomputeAt[b]) {
      Operation *op = graph.candidates[c].op;
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
      for (int s : recomputationSources(graph, ev, c))
        names.push_back(StringAttr::get(context, graph.candidates[s].name));
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
    const Candidate &cand = graph.candidates[c];
    if (ev.lastNeed[c] < 0 || ev.recomputedAt[c] >= 0)
      continue;
    std::string why = d.keptWhy.empty() ? "" : d.keptWhy[c];
    if (!cand.recomputable)
      why = "not recomputable: " + cand.why;
    if (why.empty())
      why = d.policy == "none"
                ? "policy none saves every value the backward reads"
                : llvm::formatv("cheaper to keep: recomputing costs {0} "
                                "to free {1}",
                                formatFlops(cand.cost.flops),
                                formatBytes(cand.bytes))
                      .str();
    cand.op->setAttr(kSavedAttr, StringAttr::get(context, why));
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FunctionResult {
  func::FuncOp func;
  StepGraph graph;
  Decision decision;
  Evaluation before, after;
  std::string solverNote;
};

struct MemfitRematPass
    : public memfit::impl::MemfitRematPassBase<MemfitRematPass> {
  using MemfitRematPassBase::MemfitRematPassBase;

  void runOnOperation() override;

  FailureOr<Decision> decide(StepGraph &graph, const Limits &limits,
                             std::string &note, int64_t weightsBytes);
  void reportUnmeetable(const FunctionResult &result, const Limits &limits,
                        int64_t weightsBytes,
                        std::optional<int64_t> budgetBytes, int64_t slack,
                        StringRef note);
  LogicalResult writeReport(ArrayRef<FunctionResult> results,
                            int64_t weightsBytes, const ModulePlan &plan,
                            double seconds);
};

} // namespace

FailureOr<Decision> MemfitRematPass::decide(StepGraph &graph,
                                            const Limits &limits,
                                            std::string &note,
                                            int64_t weightsBytes) {
  int nC = graph.candidates.size();
  Decision none;
  none.policy = "none";
  none.evicted.assign(nC, 0);
  if (policy == "none")
    return none;
  if (policy == "checkpoint-layers")
    return checkpointLayers(graph);
  bool constrained = limits.arenaCap >= 0 || limits.activationCap >= 0;
  if (!constrained)
    return none;
  if (policy == "auto") {
    // Cost-aware greedy from saving everything, and the classic layer
    // checkpoints made cost-aware; the cheaper plan that fits wins.
    SmallVector<Decision> plans;
    for (bool directFirst : {true, false}) {
      Decision fromNone = greedy(graph, limits, none, nullptr, directFirst);
      fromNone.policy = "auto";
      plans.push_back(std::move(fromNone));
    }
    Decision layers = checkpointLayers(graph);
    if (limits.fits(evaluate(graph, layers.evicted))) {
      Decision refined = greedy(graph, limits, layers, nullptr);
      refined.policy = "auto";
      plans.push_back(std::move(refined));
    }
    for (Decision &plan : plans)
      search(graph, limits, plan);
    std::optional<Decision> best;
    double bestPrice = 0;
    for (Decision &plan : plans) {
      Evaluation ev = evaluate(graph, plan.evicted);
      if (!limits.fits(ev))
        continue;
      if (!best || ev.price < bestPrice) {
        bestPrice = ev.price;
        best = std::move(plan);
      }
    }
    if (best) {
      best->keptWhy.assign(nC, "");
      return *best;
    }
    return failure();
  }
  // optimal
  RematProblem problem = makeProblem(graph, limits);
  SolverOptions options;
  options.timeLimitSeconds = timeLimit;
  RematSolution solution;
  std::string error;
  if (!solveRematILP(problem, options, solution, error)) {
    note = error;
    return failure();
  }
  Decision d;
  d.policy = "optimal";
  d.evicted.assign(nC, 0);
  d.keptWhy.assign(nC, "");
  for (int c = 0; c < nC; ++c) {
    d.evicted[c] = solution.recomputed[c] ? 1 : 0;
    if (d.evicted[c] && !graph.candidates[c].recomputable) {
      note = "no plan fits without recomputing '" + graph.candidates[c].name +
             "', which cannot be recomputed (" + graph.candidates[c].why + ")";
      return failure();
    }
  }
  note = solution.optimal ? "ILP (GLPK): proven optimal"
                          : "ILP (GLPK): time limit reached, best found";
  return d;
}

void MemfitRematPass::runOnOperation() {
  auto start = std::chrono::steady_clock::now();
  ModuleOp module = getOperation();
  if (policy != "none" && policy != "checkpoint-layers" && policy != "auto" &&
      policy != "optimal") {
    mlir::emitError(module.getLoc())
        << "memfit-remat: unknown policy '" << policy
        << "' (none, checkpoint-layers, auto or optimal)";
    return signalPassFailure();
  }
  std::optional<int64_t> budgetBytes;
  if (!budget.empty()) {
    budgetBytes = parseBytes(budget);
    if (!budgetBytes || *budgetBytes <= 0) {
      mlir::emitError(module.getLoc())
          << "memfit-remat: budget '" << budget
          << "' is not a size (bytes, or a number with KiB, MiB, GiB, KB, "
             "MB or GB)";
      return signalPassFailure();
    }
  }
  if (activationFraction < 0 || activationFraction > 1) {
    mlir::emitError(module.getLoc())
        << "memfit-remat: activation-fraction must be in [0, 1], got "
        << activationFraction;
    return signalPassFailure();
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
      FailureOr<StepGraph> graph = buildStepGraph(func);
      if (failed(graph))
        return signalPassFailure();
      if (graph->numForward == (int)graph->steps.size() ||
          graph->candidates.empty())
        continue;
      FunctionResult result;
      result.func = func;
      result.graph = std::move(*graph);
      results.push_back(std::move(result));
    }
    for (FunctionResult &result : results) {
      StepGraph &graph = result.graph;
      SmallVector<char> keepAll(graph.candidates.size(), 0);
      result.before = evaluate(graph, keepAll);
      Limits limits;
      if (budgetBytes)
        limits.arenaCap = *budgetBytes - weightsBytes - slack;
      if (activationFraction > 0)
        limits.activationCap = static_cast<int64_t>(
            activationFraction * result.before.peakActivation);
      std::string note;
      FailureOr<Decision> decision = decide(graph, limits, note, weightsBytes);
      if (failed(decision)) {
        reportUnmeetable(result, limits, weightsBytes, budgetBytes, slack,
                         note);
        return signalPassFailure();
      }
      result.decision = std::move(*decision);
      result.after = evaluate(graph, result.decision.evicted);
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
    funcs = definedFunctions(module);
    if (!report.empty() &&
        failed(writeReport(results, weightsBytes, *plan, seconds)))
      return signalPassFailure();
    if (failed(writeMemoryTimelineFiles(*plan, module, funcs, timeline,
                                        timelineData)))
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

void MemfitRematPass::reportUnmeetable(const FunctionResult &result,
                                       const Limits &limits,
                                       int64_t weightsBytes,
                                       std::optional<int64_t> budgetBytes,
                                       int64_t slack, StringRef note) {
  // The smallest peak any plan reaches: the greedy run down to nothing,
  // and the layer checkpoints.
  const StepGraph &graph = result.graph;
  Evaluation lowest = result.before;
  Limits impossible;
  impossible.arenaCap = 0;
  Decision start;
  start.evicted.assign(graph.candidates.size(), 0);
  start.policy = "auto";
  (void)greedy(graph, impossible, start, &lowest, /*directFirst=*/true);
  (void)greedy(graph, impossible, start, &lowest, /*directFirst=*/false);
  Evaluation layers = evaluate(graph, checkpointLayers(graph).evicted);
  if (layers.peakArena < lowest.peakArena)
    lowest = layers;
  InFlightDiagnostic diag =
      mlir::emitError(func::FuncOp(result.func)->getLoc());
  diag << "memfit-remat: ";
  if (budgetBytes)
    diag << "budget " << formatBytes(*budgetBytes) << " (" << *budgetBytes
         << " bytes)";
  if (budgetBytes && limits.activationCap >= 0)
    diag << " with ";
  if (limits.activationCap >= 0)
    diag << "activation-fraction " << activationFraction;
  diag << " cannot be met by policy " << policy
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

LogicalResult MemfitRematPass::writeReport(ArrayRef<FunctionResult> results,
                                           int64_t weightsBytes,
                                           const ModulePlan &plan,
                                           double seconds) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const FunctionResult &result : results) {
    const StepGraph &graph = result.graph;
    const Evaluation &ev = result.after;
    os << "remat report for @" << func::FuncOp(result.func).getSymName() << ": policy "
       << result.decision.policy;
    if (!budget.empty())
      os << ", budget " << budget;
    if (activationFraction > 0)
      os << ", activation-fraction " << activationFraction;
    os << "\n";
    os << llvm::formatv("{0,-8} {1,-26} {2,-40} {3,-18} {4,12} {5,-10} {6}\n",
                        "value", "op", "onnx node", "shape", "bytes",
                        "decision", "reason");
    int64_t savedBytes = 0, recomputedBytes = 0;
    int saved = 0, recomputed = 0;
    SmallVector<int> order;
    for (int c = 0, e = graph.candidates.size(); c < e; ++c)
      order.push_back(c);
    llvm::sort(order, [&](int a, int b) {
      return graph.candidates[a].step < graph.candidates[b].step;
    });
    for (int c : order) {
      const Candidate &cand = graph.candidates[c];
      if (ev.lastNeed[c] < 0)
        continue;
      bool isRecomputed = ev.recomputedAt[c] >= 0;
      std::string shape;
      for (Value r : cand.op->getResults())
        shape += (shape.empty() ? "" : ",") +
                 shapeToString(cast<RankedTensorType>(r.getType()).getShape());
      std::string reason;
      if (isRecomputed) {
        ++recomputed;
        recomputedBytes += cand.bytes;
        llvm::SetVector<int> from = recomputationSources(graph, ev, c);
        reason = llvm::formatv("before backward step {0}, {1}; from ",
                               ev.recomputedAt[c],
                               formatFlops(cand.cost.flops))
                     .str();
        if (from.empty())
          reason += "parameters and inputs";
        for (auto [i, s] : llvm::enumerate(from)) {
          if (i == 3) {
            reason += llvm::formatv(" and {0} more", from.size() - 3).str();
            break;
          }
          reason += (i ? ", " : "") + graph.candidates[s].name;
        }
      } else {
        ++saved;
        savedBytes += cand.bytes;
        auto why = cand.op->getAttrOfType<StringAttr>(kSavedAttr);
        reason = why ? why.str() : "";
      }
      StringRef node = stepNodeName(cand.op);
      os << llvm::formatv("{0,-8} {1,-26} {2,-40} {3,-18} {4,12} {5,-10} {6}\n",
                          llvm::formatv("f{0}", cand.step).str(),
                          stepOpNames(cand.op), node.empty() ? "-" : node,
                          shape, cand.bytes,
                          isRecomputed ? "recompute" : "save", reason);
    }
    double extra = ev.flops;
    os << llvm::formatv("totals: {0} saved ({1} bytes), {2} recomputed ({3} "
                        "bytes)\n",
                        saved, savedBytes, recomputed, recomputedBytes);
    os << llvm::formatv("  extra FLOPs: {0} ({1:F2}% of the step's {2}); "
                        "extra bytes moved: {3}\n",
                        formatFlops(extra),
                        graph.stepFlops > 0 ? 100.0 * extra / graph.stepFlops
                                            : 0.0,
                        formatFlops(graph.stepFlops),
                        formatBytes(ev.bytesMoved));
    os << llvm::formatv("  activation memory: {0} -> {1} bytes ({2:F1}%)\n",
                        result.before.peakActivation, ev.peakActivation,
                        result.before.peakActivation
                            ? 100.0 * ev.peakActivation /
                                  result.before.peakActivation
                            : 100.0);
    os << llvm::formatv("  modelled peak: {0} -> {1} bytes (weights {2} + "
                        "arena {3} -> {4})\n",
                        weightsBytes + result.before.peakArena,
                        weightsBytes + ev.peakArena, weightsBytes,
                        result.before.peakArena, ev.peakArena);
    if (!result.solverNote.empty())
      os << "  solver: " << result.solverNote << "\n";
  }
  os << llvm::formatv("planned: weights {0} + arena {1} = {2} bytes\n",
                      plan.weightsBytes, plan.arenaBytes,
                      plan.weightsBytes + plan.arenaBytes);
  os << llvm::formatv("remat pass time: {0:F3} s\n", seconds);

  auto file = openPassOutput(getOperation(), report, "memfit-remat report");
  if (!file)
    return failure();
  file->os() << text;
  file->keep();
  return success();
}
