//===- Fuse.cpp - memfit-fuse: transposes into contractions, chains fused -===//
//
// Folds matrix transposes into the contractions that read them (transpose
// flags), then merges each pointwise kernel into the kernel that first
// reads its results, so that a chain runs as one pass over memory and its
// intermediates are never stored. See the pass description in Passes.td
// and docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/Traffic.h"
#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/OpCost.h"
#include "memfit/Dialect/RowFrame.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/PassOutput.h"
#include "memfit/Passes/Passes.h"
#include "memfit/runtime/Bytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITFUSEPASS
#define GEN_PASS_DEF_MEMFITFOLDTRANSPOSESPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// An op that a pointwise kernel computes at its own index from its
/// operands' values there: a pure element-wise op (not dropout, whose mask
/// depends on the kernel it is in).
bool isScalarOp(Operation *op) {
  auto opClass = dyn_cast<OpClassInterface>(op);
  return opClass && opClass.getOpClass() == OpClass::ElementWise &&
         isPure(op);
}

/// Whether every op of `kernel` composes in a pointwise kernel.
bool isPointwise(KernelOp kernel) {
  if (kernel->getNumResults() == 0)
    return false;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(kernel->getResult(0).getType()).getShape();
  if (llvm::any_of(kernel->getResultTypes(), [&](Type t) {
        return cast<RankedTensorType>(t).getShape() != shape ||
               cast<RankedTensorType>(t).getNumElements() == 0;
      }))
    return false;
  return llvm::all_of(kernel.getBodyOps(), [](Operation &op) {
    return isa<ConstantOp>(op) || isScalarOp(&op) || isIndexMapping(&op);
  });
}

int64_t bytesOf(Value value) {
  return tensorBytes(cast<RankedTensorType>(value.getType()));
}

/// The ops of `kernel` that max-ops counts: all but its literals.
int64_t opCount(KernelOp kernel) {
  return llvm::count_if(kernel.getBodyOps(),
                        [](Operation &op) { return !isa<ConstantOp>(op); });
}

/// Whether `value`'s buffer is not in the arena: a function argument, a
/// parameter or a constant, which live the whole step anyway.
bool outsideArena(Value value) {
  Operation *def = bufferRoot(value).getDefiningOp();
  return !def || isa<LoadParameterOp, ConstantOp>(def);
}

/// The input of `kernel` when the kernel only transposes a matrix (a 2-D
/// float value), else null.
Value transposedMatrix(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return {};
  auto transpose = dyn_cast<TransposeOp>(*ops.begin());
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>({1, 0}) ||
      !isa<FloatType>(
          cast<RankedTensorType>(transpose.getType()).getElementType()))
    return {};
  auto arg = dyn_cast<BlockArgument>(transpose.getInput());
  if (!arg)
    return {};
  return kernel.getInputs()[arg.getArgNumber()];
}

/// The input of `kernel` when the kernel only swaps the last two
/// dimensions of a float value of rank 3 or more, else null.
Value batchTransposed(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return {};
  auto transpose = dyn_cast<TransposeOp>(*ops.begin());
  if (!transpose)
    return {};
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = perm.size();
  if (rank < 3 ||
      !isa<FloatType>(
          cast<RankedTensorType>(transpose.getType()).getElementType()))
    return {};
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return {};
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {};
  auto arg = dyn_cast<BlockArgument>(transpose.getInput());
  if (!arg)
    return {};
  return kernel.getInputs()[arg.getArgNumber()];
}

/// A 2-D contraction `op(a) op(b)` with transpose flags, as a gemm.
Value createGemm(OpBuilder &b, Location loc, Type type, Value x, Value y,
                 bool tx, bool ty, const APFloat &alpha) {
  auto gemm = GemmOp::create(b, loc, x, y, Value(), alpha,
                             APFloat(alpha.getSemantics(), 1), tx, ty);
  assert(gemm.getType() == type && "the folded gemm changes the type");
  (void)type;
  return gemm;
}

/// A kernel assembled from others (fuseInto, mergeSegments): its inputs,
/// each once, and the body that theirs are cloned into.
struct MergedKernel {
  void addInput(Value v) {
    if (index.try_emplace(v, inputs.size()).second)
      inputs.push_back(v);
  }
  /// Creates the kernel at `builder`'s point with the inputs and an empty
  /// body, and points `builder` at the body's start.
  KernelOp create(OpBuilder &builder, Location loc, TypeRange types) {
    auto kernel = KernelOp::create(builder, loc, types, inputs);
    body = builder.createBlock(&kernel.getBody());
    for (Value v : inputs)
      body->addArgument(v.getType(), v.getLoc());
    builder.setInsertionPointToStart(body);
    return kernel;
  }
  /// Clones `kernel`'s body; its arguments that `map` does not hold yet
  /// read the merged kernel's inputs. Returns the values it yields, mapped.
  SmallVector<Value> clone(OpBuilder &builder, KernelOp kernel,
                           IRMapping &map) {
    for (auto [i, v] : llvm::enumerate(kernel.getInputs()))
      if (!map.contains(kernel.getBodyBlock().getArgument(i)))
        map.map(kernel.getBodyBlock().getArgument(i),
                body->getArgument(index.lookup(v)));
    for (Operation &op : kernel.getBodyOps())
      builder.clone(op, map);
    SmallVector<Value> yielded;
    for (Value v :
         cast<YieldOp>(kernel.getBodyBlock().getTerminator()).getValues())
      yielded.push_back(map.lookup(v));
    return yielded;
  }

  SmallVector<Value> inputs;
  DenseMap<Value, unsigned> index;
  Block *body = nullptr;
};

Value reshaped(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (cast<RankedTensorType>(x.getType()).getShape() == shape)
    return x;
  return ReshapeOp::create(
      b, loc,
      RankedTensorType::get(
          shape, cast<RankedTensorType>(x.getType()).getElementType()),
      x);
}

//===----------------------------------------------------------------------===//
// Strided contraction operands
//===----------------------------------------------------------------------===//

/// A tensor's elements in another's buffer: element i at offset +
/// sum(i[d] * strides[d]).
struct Strided {
  int64_t offset = 0;
  SmallVector<int64_t> shape, strides;
};

Strided packedLayout(ArrayRef<int64_t> shape) {
  Strided layout{0, SmallVector<int64_t>(shape),
                 SmallVector<int64_t>(shape.size(), 1)};
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    layout.strides[d] = layout.strides[d + 1] * shape[d + 1];
  return layout;
}

/// `layout` with the same elements, row-major, in `shape`, when strides
/// say it: the dimensions that merge (or split) must be contiguous in the
/// layout. Dimensions of extent 1 take stride 0.
std::optional<Strided> reshapeLayout(const Strided &layout,
                                     ArrayRef<int64_t> shape) {
  SmallVector<int64_t> from, fromStrides;
  for (auto [size, stride] : llvm::zip(layout.shape, layout.strides))
    if (size != 1) {
      from.push_back(size);
      fromStrides.push_back(stride);
    }
  Strided result{layout.offset, SmallVector<int64_t>(shape),
                 SmallVector<int64_t>(shape.size(), 0)};
  size_t i = 0, j = 0;
  while (true) {
    while (j < shape.size() && shape[j] == 1)
      ++j;
    if (i == from.size() || j == shape.size())
      return i == from.size() && j == shape.size()
                 ? std::optional<Strided>(result)
                 : std::nullopt;
    // The smallest groups [i, i1) and [j, j1) of equal extent.
    size_t i1 = i + 1, j1 = j + 1;
    int64_t a = from[i], b = shape[j];
    while (a != b) {
      if (a < b) {
        if (i1 == from.size())
          return std::nullopt;
        a *= from[i1++];
      } else {
        if (j1 == shape.size())
          return std::nullopt;
        b *= shape[j1++];
      }
    }
    for (size_t t = i; t + 1 < i1; ++t)
      if (fromStrides[t] != fromStrides[t + 1] * from[t + 1])
        return std::nullopt;
    int64_t stride = fromStrides[i1 - 1];
    for (size_t t = j1; t-- > j;) {
      result.strides[t] = shape[t] == 1 ? 0 : stride;
      stride *= shape[t];
    }
    i = i1;
    j = j1;
  }
}

/// The one op of a kernel that only moves data (a transpose or a split of
/// its first input), else null.
Operation *soleMovement(KernelOp kernel) {
  auto ops = kernel.getBodyOps();
  if (std::distance(ops.begin(), ops.end()) != 1)
    return nullptr;
  Operation *op = &*ops.begin();
  if (!isa<TransposeOp, SplitOp>(op) || !isPure(op) ||
      !isa<BlockArgument>(op->getOperand(0)))
    return nullptr;
  return op;
}

/// How a matmul operand `value` reads another value's buffer when views
/// and kernels that only transpose or split (`kernels`, collected) made it
/// from that value: the value and the layout, else nothing.
std::optional<std::pair<Value, Strided>>
traceStrided(Value value, SmallVectorImpl<KernelOp> &kernels) {
  // What each step does to the layout, from `value` back to the source.
  SmallVector<std::function<std::optional<Strided>(const Strided &)>> steps;
  Value v = value;
  while (Operation *def = v.getDefiningOp()) {
    if (isBufferView(def) && !isa<StridedViewOp>(def)) {
      SmallVector<int64_t> shape(cast<RankedTensorType>(v.getType()).getShape());
      steps.push_back([shape](const Strided &l) {
        return reshapeLayout(l, shape);
      });
      v = def->getOperand(0);
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(def);
    Operation *op = kernel ? soleMovement(kernel) : nullptr;
    if (!op)
      break;
    Value yielded = cast<YieldOp>(kernel.getBodyBlock().getTerminator())
                        .getValues()[cast<OpResult>(v).getResultNumber()];
    if (yielded.getDefiningOp() != op)
      break;
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> perm(transpose.getPerm());
      steps.push_back([perm](const Strided &l) -> std::optional<Strided> {
        Strided t{l.offset, {}, {}};
        for (int64_t d : perm) {
          t.shape.push_back(l.shape[d]);
          t.strides.push_back(l.strides[d]);
        }
        return t;
      });
    } else {
      auto split = cast<SplitOp>(op);
      unsigned index = cast<OpResult>(yielded).getResultNumber();
      int64_t rank = split.getInput().getType().getRank();
      int64_t axis = split.getAxis() < 0 ? split.getAxis() + rank
                                         : split.getAxis();
      ArrayRef<int64_t> sizes = split.getSizes();
      int64_t start = 0;
      for (unsigned r = 0; r < index; ++r)
        start += sizes[r];
      int64_t size = sizes[index];
      steps.push_back([axis, start, size](const Strided &l) {
        Strided t = l;
        t.offset += start * t.strides[axis];
        t.shape[axis] = size;
        return std::optional<Strided>(t);
      });
    }
    kernels.push_back(kernel);
    v = kernel.getInputs()[cast<BlockArgument>(op->getOperand(0))
                               .getArgNumber()];
  }
  if (kernels.empty())
    return std::nullopt;
  std::optional<Strided> layout =
      packedLayout(cast<RankedTensorType>(v.getType()).getShape());
  for (auto &step : llvm::reverse(steps)) {
    layout = step(*layout);
    if (!layout)
      return std::nullopt;
  }
  // The library reads a matrix whose rows or columns are adjacent.
  size_t r = layout->shape.size();
  auto adjacent = [&](size_t d) {
    return layout->shape[d] == 1 || layout->strides[d] == 1;
  };
  if (r < 2 || !(adjacent(r - 1) || adjacent(r - 2)))
    return std::nullopt;
  return std::make_pair(v, *layout);
}

/// What the rewrites know of a function's schedule (its op order): each
/// op's position, where in-place updates are, and the last reader of each
/// buffer (through its views and what is accumulated into it in place).
struct Schedule {
  explicit Schedule(Block &block) {
    int64_t next = 0;
    for (Operation &op : block) {
      if (!isPure(&op) && !isa<KernelOp>(op)) {
        auto assign = dyn_cast<AssignOp>(op);
        writes.push_back(
            {next, assign ? assign.getNameAttr().getAttr() : StringAttr()});
      }
      position[&op] = next++;
    }
    for (Operation &op : block)
      noteUses(op);
  }

  /// Records `op`'s reads at its position.
  void noteUses(Operation &op) {
    for (Value operand : op.getOperands())
      lastUse[bufferRoot(operand)] =
          std::max(lastUse.lookup(bufferRoot(operand)), position.lookup(&op));
  }

  /// Records the reads of `value`, a new kernel's result, by the ops that
  /// read it (through views). Its entry is set afresh: an erased value's
  /// storage may hold the new one.
  void noteReaders(Value value) {
    SmallVector<Operation *> readers;
    collectBufferReaders(value, readers);
    lastUse[value] = 0;
    for (Operation *reader : readers)
      lastUse[value] = std::max(lastUse[value], position.lookup(reader));
  }

  /// Whether an in-place update of what `reads` hold (through views: a
  /// parameter's load) runs strictly between positions `from` and `to`; an
  /// impure op other than memfit.assign counts as writing everything.
  bool writeBetween(int64_t from, int64_t to, ValueRange reads) const {
    SmallVector<StringAttr> read;
    for (Value value : reads)
      if (auto load = bufferRoot(value).getDefiningOp<LoadParameterOp>())
        read.push_back(load.getNameAttr().getAttr());
    return llvm::any_of(writes, [&](const Write &w) {
      return w.at > from && w.at < to &&
             (!w.parameter || llvm::is_contained(read, w.parameter));
    });
  }

  /// The arena bytes live at each position (every buffer from the op that
  /// writes it to its last reader; arguments throughout), and their most.
  void computeLive(Block &block) {
    live.assign(position.size() + 1, 0);
    auto add = [&](int64_t from, int64_t to, int64_t bytes) {
      for (int64_t p = std::max<int64_t>(from, 0);
           p <= std::min<int64_t>(to, live.size() - 1); ++p)
        live[p] += bytes;
    };
    for (BlockArgument arg : block.getArguments())
      if (isa<RankedTensorType>(arg.getType()))
        add(0, live.size() - 1, bytesOf(arg));
    for (Operation &op : block) {
      if (op.getNumResults() == 0 || isBufferView(&op) ||
          outsideArena(op.getResult(0)))
        continue;
      int64_t at = position.lookup(&op);
      // A result written in place into an input is in that input's bytes,
      // which live until its last reader.
      for (Value result : op.getResults())
        if (isa<RankedTensorType>(result.getType()) &&
            bufferRoot(result) == result)
          add(at, std::max(at, lastUse.lookup(result)), bytesOf(result));
    }
    peak = live.empty() ? 0 : *llvm::max_element(live);
  }

  /// A change of the live bytes over positions [from, to].
  struct LiveChange {
    int64_t from, to, bytes;
  };
  /// Whether `changes` keep every position at or below the peak.
  bool fitsPeak(ArrayRef<LiveChange> changes, int64_t lo, int64_t hi) const {
    for (int64_t p = lo; p <= hi; ++p) {
      int64_t bytes = live[p];
      for (const LiveChange &c : changes)
        if (p >= c.from && p <= c.to)
          bytes += c.bytes;
      if (bytes > peak)
        return false;
    }
    return true;
  }
  void apply(ArrayRef<LiveChange> changes) {
    for (const LiveChange &c : changes)
      for (int64_t p = c.from; p <= c.to; ++p)
        live[p] += c.bytes;
  }

  DenseMap<Operation *, int64_t> position;
  /// An in-place update: its position and the parameter it writes (null
  /// for an impure op that is not memfit.assign).
  struct Write {
    int64_t at;
    StringAttr parameter;
  };
  SmallVector<Write> writes;
  DenseMap<Value, int64_t> lastUse;
  std::vector<int64_t> live;
  int64_t peak = 0;
};

struct MemfitFusePass
    : public mlir::memfit::impl::MemfitFusePassBase<MemfitFusePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t budgetBytes = static_cast<int64_t>(budget.getValue().bytes);
    OwningOpRef<ModuleOp> unfused;
    if (budgetBytes > 0)
      unfused = module.clone();
    int64_t before = 0, after = 0;
    for (func::FuncOp func : definedFunctions(module)) {
      before += kernelCount(func);
      foldTransposes(func);
      fuseFunction(func);
      if (views)
        viewContractionOperands(func);
    }
    if (multiTensor && failed(fuseSegments(module)))
      return signalPassFailure();
    for (func::FuncOp func : definedFunctions(module))
      after += kernelCount(func);
    if (budgetBytes > 0) {
      // Fusion keeps the bytes live at every step at or below the step's
      // peak (canFuse's rule), but the arena's first-fit placement may
      // still come out larger: keep the unfused step if the fused one
      // breaks the budget that it met.
      // The unfused step is planned only when the fused one is over.
      auto peak = [](ModuleOp m) -> FailureOr<int64_t> {
        FailureOr<ModulePlan> plan = planModule(m, definedFunctions(m));
        if (failed(plan))
          return failure();
        return plan->weightsBytes + plan->arenaBytes;
      };
      FailureOr<int64_t> fusedPeak = peak(module);
      if (failed(fusedPeak))
        return signalPassFailure();
      FailureOr<int64_t> plainPeak =
          *fusedPeak > budgetBytes ? peak(*unfused) : FailureOr<int64_t>(0);
      if (failed(plainPeak))
        return signalPassFailure();
      if (*fusedPeak > budgetBytes && *plainPeak <= budgetBytes) {
        mlir::emitRemark(module.getLoc())
            << "memfit-fuse: the fused step's plan ("
            << ::memfit::formatBytes(*fusedPeak) << ") exceeds the budget "
            << ::memfit::formatBytes(budgetBytes)
            << " that the unfused one meets; kept unfused";
        module.getBodyRegion().takeBody(unfused->getBodyRegion());
        after = before;
      }
    }
    if (!rematReport.empty() && failed(appendRematReport(module, before)))
      return signalPassFailure();
    if (!report.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "memfit-fuse: " << before << " kernels -> " << after << "\n";
      writeSteps(module, os);
      std::unique_ptr<llvm::ToolOutputFile> file =
          openPassOutput(module, report, "memfit-fuse report");
      if (!file)
        return signalPassFailure();
      file->os() << text;
      file->keep();
    }
  }

  /// Appends the fused step's plan to memfit-remat's report (which
  /// planned the step before fusion).
  LogicalResult appendRematReport(ModuleOp module, int64_t kernelsBefore) {
    FailureOr<ModulePlan> plan = planModule(module, definedFunctions(module));
    if (failed(plan))
      return failure();
    int64_t kernels = 0;
    for (func::FuncOp func : definedFunctions(module))
      kernels += kernelCount(func);
    std::string line = llvm::formatv(
        "planned after memfit-fuse ({0} kernels -> {1}): weights {2} + arena "
        "{3} = {4} bytes\n",
        kernelsBefore, kernels, plan->weightsBytes, plan->arenaBytes,
        plan->weightsBytes + plan->arenaBytes);
    if (rematReport == "-") {
      llvm::outs() << line;
      return success();
    }
    std::error_code error;
    llvm::raw_fd_ostream os(rematReport, error, llvm::sys::fs::OF_Append);
    if (!error) {
      os << line;
      os.close();
      error = os.error();
    }
    if (error)
      return module.emitError() << "cannot append to memfit-remat report '"
                                << rematReport << "': " << error.message();
    return success();
  }

  /// stepOpNames, the first few of a long list (a multi-tensor kernel's)
  /// and how many more, with the segment count.
  static std::string shortOpNames(Operation *step) {
    constexpr size_t kShown = 8;
    SmallVector<StringRef> ops;
    std::string all = stepOpNames(step);
    StringRef(all).split(ops, '+');
    std::string text = ops.size() <= kShown
                           ? all
                           : llvm::join(ArrayRef(ops).take_front(kShown), "+") +
                                 " +" + std::to_string(ops.size() - kShown) +
                                 " more ops";
    if (auto sizes = step->getAttrOfType<DenseI64ArrayAttr>(kSegmentsAttr))
      text += " (" + std::to_string(sizes.size()) + " segments)";
    return text;
  }

  /// The report's body: every step of every function with the bytes it
  /// reads and writes, its FLOPs, its ops and ONNX nodes; then the totals
  /// and the lower bound (Traffic.h). Only the counts when the module has
  /// no memory plan (a function not formed into kernels).
  static void writeSteps(ModuleOp module, raw_ostream &os) {
    FailureOr<ModulePlan> plan = failure();
    {
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      plan = planModule(module, definedFunctions(module));
    }
    if (failed(plan))
      return;
    for (auto [func, fplan] :
         llvm::zip(definedFunctions(module), plan->functions)) {
      os << "@" << func.getSymName() << ":\n";
      os << llvm::formatv("  {0,5} {1,-11} {2,14} {3,14} {4,16}  {5}\n", "step",
                          "kind", "read", "written", "FLOPs",
                          "ops [ONNX nodes]");
      for (auto [i, step] : llvm::enumerate(fplan.schedule)) {
        OpCost cost = estimateCost(step);
        int64_t written = 0;
        for (Value result : step->getResults())
          written += bytesOf(result);
        os << llvm::formatv("  {0,5} {1,-11} {2,14} {3,14} {4,16}  {5}", i + 1,
                            isa<KernelOp>(step) ? "kernel" : "contraction",
                            ::memfit::groupDigits(cost.bytes - written),
                            ::memfit::groupDigits(written),
                            ::memfit::groupDigits(cost.flops),
                            shortOpNames(step));
        SmallVector<StringRef> nodes;
        auto note = [&](Location loc) {
          StringRef name = onnxNodeName(loc);
          if (!name.empty() && !llvm::is_contained(nodes, name))
            nodes.push_back(name);
        };
        note(step->getLoc());
        if (auto kernel = dyn_cast<KernelOp>(step))
          for (Operation &op : kernel.getBodyOps())
            note(op.getLoc());
        if (!nodes.empty()) {
          constexpr size_t kShown = 4;
          os << " [" << llvm::join(ArrayRef(nodes).take_front(kShown), " ");
          if (nodes.size() > kShown)
            os << " +" << nodes.size() - kShown << " more";
          os << "]";
        }
        os << "\n";
      }
      StepTraffic traffic = stepTraffic(fplan);
      writeTraffic(traffic, "@" + func.getSymName().str(), os);
    }
  }

  /// Transposes of matrices that feed contractions become the contraction's
  /// transpose flags, and a contraction whose result only a transpose reads
  /// computes the transpose itself (C^T = op(B)^T op(A)^T): the library
  /// reads the operand in place, no transposed copy is made.
  static void foldTransposes(func::FuncOp func) {
    Block &block = func.getBody().front();
    std::optional<Schedule> schedule(std::in_place, block);
    llvm::SmallPtrSet<Operation *, 8> erased;
    for (KernelOp kernel : llvm::to_vector(block.getOps<KernelOp>())) {
      if (erased.contains(kernel))
        continue;
      // A fold replaces ops and values: positions and readers are taken
      // afresh (an erased value's storage may hold a new one).
      if (!schedule)
        schedule.emplace(block);
      Value source = transposedMatrix(kernel);
      bool batched = !source;
      if (batched)
        source = batchTransposed(kernel);
      if (!source)
        continue;
      Value transposed = kernel->getResult(0);
      // The contraction that made the source, when only this reads it.
      if (foldIntoProducer(kernel, source)) {
        schedule.reset();
        continue;
      }
      // A contraction after an in-place update would read the source
      // updated: those keep the copy. A transpose back is the source
      // itself, for its readers.
      int64_t at = schedule->position.lookup(kernel);
      SmallVector<OpOperand *> uses, foldable;
      int64_t lastReader = 0;
      for (OpOperand &use : transposed.getUses()) {
        uses.push_back(&use);
        Operation *owner = use.getOwner();
        bool back = batched && isTransposeBack(owner, transposed);
        if (!back &&
            !(batched ? canTakeBatchTransposed(use) : canTakeTransposed(use)))
          continue;
        int64_t reader = schedule->position.lookup(owner);
        if (back)
          for (Operation *user : owner->getUsers())
            reader = std::max(reader, schedule->position.lookup(user));
        if (schedule->writeBetween(at, reader, source))
          continue;
        foldable.push_back(&use);
        lastReader = std::max(lastReader, reader);
      }
      if (foldable.empty())
        continue;
      // The source now lives until the contractions read it: free when it
      // is not in the arena or lives that long anyway, or when the copy
      // (as many bytes) goes away.
      if (!outsideArena(source) && foldable.size() != uses.size() &&
          schedule->lastUse.lookup(bufferRoot(source)) < lastReader)
        continue;
      for (OpOperand *use : foldable) {
        Operation *owner = use->getOwner();
        if (batched && isTransposeBack(owner, transposed)) {
          owner->getResult(0).replaceAllUsesWith(source);
          erased.insert(owner);
          owner->erase();
        } else if (batched) {
          takeBatchTransposed(*use, source);
        } else {
          takeTransposed(*use, source);
        }
      }
      if (transposed.use_empty())
        kernel->erase();
      schedule.reset();
    }
  }

  /// Whether `op` is a kernel that swaps the last two dimensions of
  /// `transposed` back (and computes no gradient: those keep their ops).
  static bool isTransposeBack(Operation *op, Value transposed) {
    auto back = dyn_cast<KernelOp>(op);
    return back && batchTransposed(back) == transposed &&
           !back->hasAttr(kGradientOfAttr) &&
           !back.getBodyOps().begin()->hasAttr(kGradientOfAttr);
  }

  /// Whether `use` is a float matmul's operand of rank 3 or more, which the
  /// library can read transposed in each batch (the attention's K^T and
  /// the transposes of its gradients).
  static bool canTakeBatchTransposed(OpOperand &use) {
    auto matmul = dyn_cast<MatMulOp>(use.getOwner());
    return matmul && isa<FloatType>(matmul.getType().getElementType()) &&
           cast<RankedTensorType>(use.get().getType()).getRank() >= 3;
  }

  /// Rewrites `use`'s matmul to read `source` with its transpose flag
  /// flipped.
  static void takeBatchTransposed(OpOperand &use, Value source) {
    auto matmul = cast<MatMulOp>(use.getOwner());
    use.set(source);
    if (use.getOperandNumber() == 0)
      matmul.setTransA(!matmul.getTransA());
    else
      matmul.setTransB(!matmul.getTransB());
  }

  /// Whether the contraction that reads `use` can read the transpose's
  /// source with a flag instead: a gemm's a or b, a matmul's 2-D rhs (with
  /// an lhs of rank 2 or more, flattened), or its 2-D lhs with a 2-D rhs.
  static bool canTakeTransposed(OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto gemm = dyn_cast<GemmOp>(owner))
      return use.getOperandNumber() < 2;
    auto matmul = dyn_cast<MatMulOp>(owner);
    if (!matmul || !isa<FloatType>(matmul.getType().getElementType()) ||
        matmul.getTransA() || matmul.getTransB())
      return false;
    int64_t lhsRank = matmul.getLhs().getType().getRank();
    int64_t rhsRank = matmul.getRhs().getType().getRank();
    if (use.getOperandNumber() == 1)
      return rhsRank == 2 && lhsRank >= 2;
    return lhsRank == 2 && rhsRank == 2;
  }

  /// Rewrites `use`'s contraction to read `source` (the transposed
  /// operand's own matrix) with the transpose flag flipped.
  static void takeTransposed(OpOperand &use, Value source) {
    Operation *owner = use.getOwner();
    OpBuilder b(owner);
    if (auto gemm = dyn_cast<GemmOp>(owner)) {
      use.set(source);
      if (use.getOperandNumber() == 0)
        gemm.setTransA(!gemm.getTransA());
      else
        gemm.setTransB(!gemm.getTransB());
      return;
    }
    auto matmul = cast<MatMulOp>(owner);
    Location loc = matmul.getLoc();
    APFloat one(1.0f);
    Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
    bool transA = false, transB = false;
    if (use.getOperandNumber() == 0) {
      lhs = source;
      transA = true;
    } else {
      rhs = source;
      transB = true;
    }
    // A batch of rows times a matrix is one 2-D product over the rows.
    ArrayRef<int64_t> out = matmul.getType().getShape();
    ArrayRef<int64_t> lhsShape = matmul.getLhs().getType().getShape();
    int64_t k = lhsShape.back();
    int64_t rows =
        matmul.getLhs().getType().getNumElements() / std::max<int64_t>(k, 1);
    Value flat = transA ? lhs : reshaped(b, loc, lhs, {rows, k});
    Type elt = matmul.getType().getElementType();
    Value product = createGemm(
        b, loc,
        RankedTensorType::get({transA ? out[0] : rows, out.back()}, elt), flat,
        rhs, transA, transB, one);
    // What the planner and the reports know of the step (backward, saved).
    copyMemfitAttrs(matmul, product.getDefiningOp());
    matmul.replaceAllUsesWith(reshaped(b, loc, product, out));
    matmul->erase();
  }

  /// When `kernel` transposes a contraction's result (a matrix, or each
  /// matrix of a batch) that nothing else reads, computes the transposed
  /// result directly and erases both.
  static bool foldIntoProducer(KernelOp kernel, Value source) {
    Operation *producer = source.getDefiningOp();
    if (!producer || !source.hasOneUse())
      return false;
    Value a, b;
    bool ta = false, tb = false;
    APFloat alpha(1.0f);
    if (auto gemm = dyn_cast<GemmOp>(producer)) {
      if (gemm.getC())
        return false;
      a = gemm.getA();
      b = gemm.getB();
      ta = gemm.getTransA();
      tb = gemm.getTransB();
      alpha = gemm.getAlpha();
    } else if (auto matmul = dyn_cast<MatMulOp>(producer)) {
      if (matmul.getLhs().getType().getRank() < 2 ||
          matmul.getRhs().getType().getRank() < 2)
        return false;
      a = matmul.getLhs();
      b = matmul.getRhs();
      ta = matmul.getTransA();
      tb = matmul.getTransB();
    } else {
      return false;
    }
    OpBuilder builder(producer);
    Type type = kernel->getResult(0).getType();
    Value transposed;
    if (cast<RankedTensorType>(type).getRank() == 2) {
      transposed =
          createGemm(builder, producer->getLoc(), type, b, a, !tb, !ta, alpha);
    } else {
      // (op(A) op(B))^T = op(B)^T op(A)^T in each batch.
      auto matmul =
          MatMulOp::create(builder, producer->getLoc(), b, a, !tb, !ta);
      transposed = matmul.getResult();
    }
    // The step's attributes, and the transpose's (a gradient's
    // memfit.gradient_of is on the op that computes it last).
    Operation *gemm = transposed.getDefiningOp();
    for (Operation *from :
         {producer, kernel.getOperation(), &*kernel.getBodyOps().begin()})
      copyMemfitAttrs(from, gemm);
    kernel->getResult(0).replaceAllUsesWith(transposed);
    kernel->erase();
    producer->erase();
    return true;
  }

  /// Matmul operands that kernels only transposed or split off another
  /// value (the attention heads of a QKV projection, the gradient's heads)
  /// become strided views of that value, read in place by the library
  /// call; a kernel that only transposes a matmul's result (the heads
  /// merged back) becomes the matmul's result_perm. The copies go: a
  /// rewrite is made when every reader of the kernels' results takes the
  /// view, and no in-place update writes the source in between.
  void viewContractionOperands(func::FuncOp func) {
    Block &block = func.getBody().front();
    Schedule schedule(block);
    struct Candidate {
      OpOperand *use;
      Value source;
      Strided layout;
      SmallVector<KernelOp> kernels;
    };
    SmallVector<Candidate> candidates;
    for (MatMulOp matmul : llvm::to_vector(block.getOps<MatMulOp>())) {
      if (!isa<FloatType>(matmul.getType().getElementType()))
        continue;
      for (OpOperand &use : matmul->getOpOperands()) {
        Candidate c{&use, {}, {}, {}};
        auto traced = traceStrided(use.get(), c.kernels);
        if (!traced)
          continue;
        c.source = traced->first;
        c.layout = traced->second;
        int64_t first = schedule.position.lookup(c.kernels.back());
        if (schedule.writeBetween(first, schedule.position.lookup(matmul),
                                  c.source))
          continue;
        candidates.push_back(std::move(c));
      }
    }
    // Keep the candidates whose kernels all go: every reader of their
    // results (through views) is a kernel that goes or a kept candidate's
    // operand.
    bool changed = true;
    while (changed) {
      changed = false;
      llvm::SmallPtrSet<Operation *, 16> going;
      llvm::SmallPtrSet<OpOperand *, 16> taken;
      for (Candidate &c : candidates) {
        going.insert(c.kernels.begin(), c.kernels.end());
        taken.insert(c.use);
      }
      auto gone = [&](KernelOp kernel) {
        SmallVector<Value> work(kernel->getResults());
        while (!work.empty()) {
          Value v = work.pop_back_val();
          for (OpOperand &use : v.getUses()) {
            Operation *owner = use.getOwner();
            if (isBufferView(owner) && !isa<StridedViewOp>(owner))
              work.push_back(owner->getResult(0));
            else if (!going.contains(owner) && !taken.contains(&use))
              return false;
          }
        }
        return true;
      };
      auto kept = llvm::remove_if(candidates, [&](Candidate &c) {
        return !llvm::all_of(c.kernels, gone);
      });
      changed = kept != candidates.end();
      candidates.erase(kept, candidates.end());
    }
    llvm::SmallSetVector<Operation *, 16> dead;
    for (Candidate &c : candidates) {
      OpBuilder b(c.use->getOwner());
      auto view = StridedViewOp::create(
          b, c.use->getOwner()->getLoc(), c.use->get().getType(), c.source,
          b.getI64IntegerAttr(c.layout.offset),
          b.getDenseI64ArrayAttr(c.layout.strides));
      Value old = c.use->get();
      c.use->set(view);
      // The views that led to the kernels, when nothing else reads them.
      while (Operation *def = old.getDefiningOp()) {
        if (!def->use_empty())
          break;
        if (isa<KernelOp>(def)) {
          dead.insert(def);
          break;
        }
        old = def->getOperand(0);
        def->erase();
      }
    }
    // Kernels (last first: a split's reader before the transpose it reads)
    // and the views between them.
    std::function<void(Operation *)> erase = [&](Operation *op) {
      SmallVector<Value> inputs(op->getOperands());
      op->erase();
      for (Value input : inputs)
        if (Operation *def = input.getDefiningOp())
          if (def->use_empty() && (isBufferView(def) || isa<KernelOp>(def)))
            erase(def);
    };
    for (Operation *kernel : dead)
      if (kernel->use_empty())
        erase(kernel);
    for (KernelOp kernel : llvm::to_vector(block.getOps<KernelOp>()))
      if (!permuteIntoProducer(kernel))
        permuteConcatInputs(kernel);
  }

  /// The matmul whose result `value` is through views that only add or
  /// drop dimensions of extent 1, when nothing else reads it and it can
  /// take a result_perm; else null.
  static MatMulOp unitViewedMatMul(Value value) {
    while (Operation *def = value.getDefiningOp()) {
      if (!value.hasOneUse())
        return {};
      if (auto matmul = dyn_cast<MatMulOp>(def))
        return isa<FloatType>(matmul.getType().getElementType()) &&
                       matmul.getLhs().getType().getRank() >= 2 &&
                       matmul.getRhs().getType().getRank() >= 2 &&
                       !llvm::is_contained(matmul.getType().getShape(), 1)
                   ? matmul
                   : MatMulOp();
      if (!isBufferView(def) || isa<StridedViewOp>(def))
        return {};
      auto dropUnits = [](Type t) {
        SmallVector<int64_t> shape;
        for (int64_t d : cast<RankedTensorType>(t).getShape())
          if (d != 1)
            shape.push_back(d);
        return shape;
      };
      if (dropUnits(value.getType()) != dropUnits(def->getOperand(0).getType()))
        return {};
      value = def->getOperand(0);
    }
    return {};
  }

  /// A matmul that writes its result transposed by `perm` (over `viewed`,
  /// its result seen through views adding dimensions of extent 1) in place,
  /// when that keeps the last dimension last; else null.
  static MatMulOp permutedThroughUnits(OpBuilder &b, MatMulOp matmul,
                                       RankedTensorType viewed,
                                       ArrayRef<int64_t> perm) {
    // Each non-unit dimension of the view is the next of the product's.
    SmallVector<int64_t> productDim(viewed.getRank(), -1);
    int64_t next = 0;
    for (auto [d, size] : llvm::enumerate(viewed.getShape()))
      if (size != 1)
        productDim[d] = next++;
    SmallVector<int64_t> induced;
    for (int64_t d : perm)
      if (productDim[d] >= 0)
        induced.push_back(productDim[d]);
    int64_t rank = matmul.getType().getRank();
    if (static_cast<int64_t>(induced.size()) != rank ||
        induced.back() != rank - 1)
      return {};
    return withResultPerm(b, matmul, induced);
  }

  /// `matmul` writing its result further transposed by `perm` (composed
  /// with its result_perm), at `b`'s point, with its attributes.
  static MatMulOp withResultPerm(OpBuilder &b, MatMulOp matmul,
                                 ArrayRef<int64_t> perm) {
    SmallVector<int64_t> composed;
    for (int64_t d : perm)
      composed.push_back(matmul.getResultPerm() ? (*matmul.getResultPerm())[d]
                                                : d);
    auto permuted = MatMulOp::create(b, matmul.getLoc(), matmul.getLhs(),
                                     matmul.getRhs(), matmul.getTransA(),
                                     matmul.getTransB(),
                                     b.getDenseI64ArrayAttr(composed));
    copyMemfitAttrs(matmul, permuted);
    return permuted;
  }

  /// When `kernel` only transposes the concatenation of matmul results
  /// (through views of extent-1 dimensions; the gradients of Q, K and V
  /// joined and moved back into the QKV projection's layout), the matmuls
  /// write their results transposed and one kernel concatenates them along
  /// the transposed axis: the concatenation before the transpose is not
  /// stored. Returns whether it did.
  static bool permuteConcatInputs(KernelOp kernel) {
    auto transpose = dyn_cast_or_null<TransposeOp>(soleMovement(kernel));
    if (!transpose || kernel.getInputs().size() != 1)
      return false;
    Value joined = kernel.getInputs()[0];
    auto concatKernel = joined.getDefiningOp<KernelOp>();
    if (!concatKernel || !joined.hasOneUse() ||
        concatKernel->getNumResults() != 1)
      return false;
    auto ops = concatKernel.getBodyOps();
    if (std::distance(ops.begin(), ops.end()) != 1)
      return false;
    auto concat = dyn_cast<ConcatOp>(*ops.begin());
    if (!concat || !isPure(concat))
      return false;
    SmallVector<MatMulOp> matmuls;
    for (Value input : concat.getInputs()) {
      auto arg = dyn_cast<BlockArgument>(input);
      MatMulOp matmul =
          arg ? unitViewedMatMul(concatKernel.getInputs()[arg.getArgNumber()])
              : MatMulOp();
      if (!matmul || llvm::is_contained(matmuls, matmul))
        return false;
      matmuls.push_back(matmul);
    }
    ArrayRef<int64_t> perm = transpose.getPerm();
    int64_t rank = perm.size();
    int64_t axis = concat.getAxis() < 0 ? concat.getAxis() + rank
                                        : concat.getAxis();
    int64_t newAxis = llvm::find(perm, axis) - perm.begin();
    OpBuilder b(concatKernel);
    SmallVector<Value> pieces;
    SmallVector<Operation *> made;
    for (auto [matmul, input] : llvm::zip(matmuls, concat.getInputs())) {
      auto viewed = cast<RankedTensorType>(input.getType());
      b.setInsertionPoint(matmul);
      MatMulOp permuted = permutedThroughUnits(b, matmul, viewed, perm);
      if (!permuted) {
        for (Operation *op : llvm::reverse(made))
          op->erase();
        return false;
      }
      made.push_back(permuted);
      SmallVector<int64_t> shape;
      for (int64_t d : perm)
        shape.push_back(viewed.getDimSize(d));
      b.setInsertionPointAfter(permuted);
      auto piece = ReshapeOp::create(
          b, matmul.getLoc(),
          RankedTensorType::get(shape, viewed.getElementType()), permuted);
      made.push_back(piece);
      pieces.push_back(piece);
    }
    b.setInsertionPoint(concatKernel);
    MergedKernel merged;
    for (Value piece : pieces)
      merged.addInput(piece);
    KernelOp joinedKernel = merged.create(b, concatKernel.getLoc(),
                                          kernel->getResultTypes());
    copyMemfitAttrs(concatKernel, joinedKernel);
    copyMemfitAttrs(kernel, joinedKernel);
    SmallVector<Value> args;
    for (Value piece : pieces)
      args.push_back(merged.body->getArgument(merged.index.lookup(piece)));
    auto newConcat = ConcatOp::create(b, concat.getLoc(), args,
                                      b.getI64IntegerAttr(newAxis));
    for (NamedAttribute attr : concat->getAttrs())
      if (attr.getName() != concat.getAxisAttrName())
        newConcat->setAttr(attr.getName(), attr.getValue());
    YieldOp::create(b, concat.getLoc(), newConcat.getResult());
    kernel->getResult(0).replaceAllUsesWith(joinedKernel->getResult(0));
    kernel->erase();
    SmallVector<Value> inputs(concatKernel.getInputs());
    concatKernel->erase();
    // The views between and the matmuls that the permuted ones replace.
    for (Value input : inputs)
      while (Operation *def = input.getDefiningOp()) {
        if (!def->use_empty())
          break;
        input = isa<MatMulOp>(def) ? Value() : def->getOperand(0);
        def->erase();
        if (!input)
          break;
      }
    return true;
  }

  /// When `kernel` only transposes a float matmul's result that nothing
  /// else reads, keeping the last dimension last, the matmul writes its
  /// result so transposed (result_perm) and the kernel goes. Returns
  /// whether it did.
  static bool permuteIntoProducer(KernelOp kernel) {
    auto transpose = dyn_cast_or_null<TransposeOp>(soleMovement(kernel));
    if (!transpose)
      return false;
    Value input = kernel.getInputs()[0];
    auto matmul = input.getDefiningOp<MatMulOp>();
    ArrayRef<int64_t> perm = transpose.getPerm();
    if (!matmul || !input.hasOneUse() || kernel.getInputs().size() != 1 ||
        !isa<FloatType>(matmul.getType().getElementType()) ||
        matmul.getLhs().getType().getRank() < 2 ||
        matmul.getRhs().getType().getRank() < 2 ||
        perm.back() != static_cast<int64_t>(perm.size()) - 1)
      return false;
    OpBuilder b(matmul);
    MatMulOp permuted = withResultPerm(b, matmul, perm);
    for (Operation *from : {kernel.getOperation(), transpose.getOperation()})
      copyMemfitAttrs(from, permuted);
    kernel->getResult(0).replaceAllUsesWith(permuted.getResult());
    kernel->erase();
    matmul->erase();
    return true;
  }

  /// Multi-tensor kernels: consecutive independent pointwise kernels that
  /// update parameters in place (the optimizer's update of each) become
  /// one launch of several segments. The merged kernel runs where the last
  /// of them ran, so the inputs of the others live until then; all of them
  /// were live at the first one's step already, and the results go to the
  /// weights, so the plan cannot grow; it is checked all the same.
  LogicalResult fuseSegments(ModuleOp module) {
    OwningOpRef<ModuleOp> unmerged = module.clone();
    bool merged = false;
    for (func::FuncOp func : definedFunctions(module))
      for (SmallVector<KernelOp> &group : segmentGroups(func)) {
        mergeSegments(group);
        merged = true;
      }
    if (!merged)
      return success();
    auto total = [](ModuleOp m) -> FailureOr<int64_t> {
      FailureOr<ModulePlan> plan = planModule(m, definedFunctions(m));
      if (failed(plan))
        return failure();
      return plan->weightsBytes + plan->arenaBytes;
    };
    FailureOr<int64_t> with = total(module), without = total(*unmerged);
    if (failed(with) || failed(without))
      return failure();
    if (*with > *without)
      module.getBodyRegion().takeBody(unmerged->getBodyRegion());
    return success();
  }

  /// The parameters whose loads a kernel reads, and those its results are
  /// assigned to.
  static void parametersOf(KernelOp kernel, DenseSet<StringAttr> &reads,
                           DenseSet<StringAttr> &writes) {
    for (Value input : kernel.getInputs())
      if (auto load = bufferRoot(input).getDefiningOp<LoadParameterOp>())
        reads.insert(load.getNameAttr().getAttr());
    for (Operation *user : kernel->getUsers())
      if (auto assign = dyn_cast<AssignOp>(user))
        writes.insert(assign.getNameAttr().getAttr());
  }

  /// Whether a kernel merged from `a` and `b` would read a parameter that
  /// one of its results updates in place.
  static bool updatesWhatItReads(KernelOp a, KernelOp b) {
    DenseSet<StringAttr> reads, writes;
    parametersOf(a, reads, writes);
    parametersOf(b, reads, writes);
    return llvm::any_of(writes,
                        [&](StringAttr p) { return reads.contains(p); });
  }

  /// Whether every result of `kernel` is stored by memfit.assign: it
  /// writes parameters or states in place, not the arena.
  static bool updatesInPlace(KernelOp kernel) {
    return llvm::all_of(kernel->getResults(), [](Value result) {
      return result.hasOneUse() && isa<AssignOp>(*result.getUsers().begin());
    });
  }

  /// Runs of pointwise kernels that update parameters or states in place
  /// (updatesInPlace) with only parameter loads, constants and in-place
  /// updates between them, none reading another's results or a
  /// parameter that another updates (in one launch, the read would race
  /// with the write), with the same memfit attributes.
  SmallVector<SmallVector<KernelOp>> segmentGroups(func::FuncOp func) {
    // CUDA passes at most 4 KB of kernel parameters; pointers are 8 bytes.
    constexpr int64_t kMaxPointers = 400;
    SmallVector<SmallVector<KernelOp>> groups;
    SmallVector<KernelOp> group;
    llvm::SmallPtrSet<Operation *, 16> members;
    DenseSet<StringAttr> reads, writes;
    llvm::SmallPtrSet<Value, 32> inputs;
    int64_t pointers = 0, ops = 0;
    auto close = [&] {
      if (group.size() > 1)
        groups.push_back(group);
      group.clear();
      members.clear();
      reads.clear();
      writes.clear();
      inputs.clear();
      pointers = ops = 0;
    };
    auto memfitAttrs = [](Operation *op) {
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute attr : op->getAttrs())
        if (attr.getName().getValue().starts_with("memfit."))
          attrs.push_back(attr);
      return attrs;
    };
    for (Operation &op : func.getBody().front()) {
      if (isa<LoadParameterOp, ConstantOp, AssignOp>(op))
        continue;
      auto kernel = dyn_cast<KernelOp>(op);
      if (!kernel || !isPointwise(kernel) || !updatesInPlace(kernel)) {
        close();
        continue;
      }
      DenseSet<StringAttr> kernelReads, kernelWrites;
      parametersOf(kernel, kernelReads, kernelWrites);
      int64_t kernelOps = opCount(kernel);
      int64_t newInputs = llvm::count_if(
          kernel.getInputs(), [&](Value v) { return !inputs.contains(v); });
      bool independent =
          llvm::none_of(
              kernel.getInputs(),
              [&](Value v) { return members.contains(v.getDefiningOp()); }) &&
          llvm::none_of(kernelReads,
                        [&](StringAttr p) { return writes.contains(p); }) &&
          llvm::none_of(kernelWrites, [&](StringAttr p) {
            return reads.contains(p) || writes.contains(p);
          });
      bool fits =
          pointers + newInputs + kernel->getNumResults() <= kMaxPointers &&
          (maxOps <= 0 || ops + kernelOps <= maxOps);
      if (!group.empty() && (!independent || !fits ||
                             memfitAttrs(kernel) != memfitAttrs(group.front())))
        close();
      group.push_back(kernel);
      members.insert(kernel);
      reads.insert(kernelReads.begin(), kernelReads.end());
      writes.insert(kernelWrites.begin(), kernelWrites.end());
      for (Value v : kernel.getInputs())
        if (inputs.insert(v).second)
          ++pointers;
      pointers += kernel->getNumResults();
      ops += kernelOps;
    }
    close();
    return groups;
  }

  /// One kernel at the last of `group`'s place that runs each as a
  /// segment; the updates of their results move after it.
  static void mergeSegments(ArrayRef<KernelOp> group) {
    MergedKernel parts;
    SmallVector<Type> types;
    SmallVector<int64_t> sizes;
    for (KernelOp kernel : group) {
      for (Value v : kernel.getInputs())
        parts.addInput(v);
      llvm::append_range(types, kernel->getResultTypes());
      sizes.push_back(kernel->getNumResults());
    }
    KernelOp last = group.back();
    OpBuilder builder(last);
    KernelOp merged = parts.create(builder, last.getLoc(), types);
    copyMemfitAttrs(group.front(), merged);
    merged->setAttr(kSegmentsAttr, builder.getDenseI64ArrayAttr(sizes));
    SmallVector<Value> yielded;
    for (KernelOp kernel : group) {
      IRMapping map;
      llvm::append_range(yielded, parts.clone(builder, kernel, map));
    }
    YieldOp::create(builder, last.getLoc(), yielded);

    unsigned next = 0;
    for (KernelOp kernel : group)
      for (OpResult result : kernel->getResults())
        result.replaceAllUsesWith(merged->getResult(next++));
    // The updates of the earlier kernels' results (and anything else that
    // reads them) now follow the merged kernel, in their order.
    SmallVector<Operation *> early;
    for (Operation *user : merged->getUsers())
      if (user->isBeforeInBlock(merged))
        early.push_back(user);
    llvm::sort(early, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    early.erase(std::unique(early.begin(), early.end()), early.end());
    Operation *after = merged;
    for (Operation *op : early) {
      op->moveAfter(after);
      after = op;
    }
    for (KernelOp kernel : group)
      kernel->erase();
  }

  static int64_t kernelCount(func::FuncOp func) {
    return llvm::range_size(func.getBody().getOps<KernelOp>());
  }

  /// Merges producers into their consumers until none can be.
  void fuseFunction(func::FuncOp func) {
    Block &block = func.getBody().front();
    // A merged kernel takes its consumer's position.
    Schedule schedule(block);
    schedule.computeLive(block);
    auto &position = schedule.position;

    bool changed = true;
    while (changed) {
      changed = false;
      // Kernels merged in this round are looked at in the next.
      SmallVector<KernelOp> kernels(block.getOps<KernelOp>());
      // The kernels merged away are unlinked, and destroyed only when the
      // round ends: a kernel made in the round never takes the address of
      // one in `kernels` or `erased`, so what merges does not depend on
      // where the allocator puts ops (it did: a merged kernel that reused a
      // merged-away one's memory was taken for it and skipped).
      llvm::SmallPtrSet<Operation *, 16> erased;
      SmallVector<Operation *> unlinked;
      auto merge = [&](KernelOp first, KernelOp second) {
        int64_t at = position[second];
        position.erase(second);
        position.erase(first);
        erased.insert(first);
        erased.insert(second);
        KernelOp merged = fuseInto(first, second, unlinked);
        position[merged] = at;
        schedule.noteUses(*merged);
        for (Value result : merged->getResults())
          schedule.noteReaders(result);
        changed = true;
      };
      for (KernelOp producer : kernels) {
        if (erased.contains(producer))
          continue;
        KernelOp consumer = firstConsumer(producer, position);
        if (!consumer || erased.contains(consumer) ||
            !canFuse(producer, consumer, schedule))
          continue;
        schedule.apply(pendingChanges);
        merge(producer, consumer);
      }
      if (changed || !rows)
        continue;
      // Siblings, once producers and consumers are merged.
      for (auto [i, first] : llvm::enumerate(kernels)) {
        if (erased.contains(first))
          continue;
        for (KernelOp second :
             ArrayRef(kernels).drop_front(i + 1).take_front(kSiblingWindow)) {
          if (erased.contains(second) ||
              !canMergeSiblings(first, second, schedule))
            continue;
          merge(first, second);
          break;
        }
      }
      for (Operation *op : unlinked)
        op->destroy();
    }
  }

  /// How many kernels after a row kernel are looked at for a sibling.
  static constexpr int64_t kSiblingWindow = 8;

  /// Whether `first`, a row kernel, can run inside `second`, a later row
  /// kernel of the same frame that reads one of its inputs (layer norm's
  /// scale and bias gradients, column sums of one gradient): nothing reads
  /// `first`'s results before `second` (so `second` does not depend on
  /// it), no in-place update comes between, and every arena input of
  /// `first` is read at `second` or later anyway (no bytes live longer).
  bool canMergeSiblings(KernelOp first, KernelOp second,
                        const Schedule &schedule) {
    std::optional<RowFrame> frame = rowFrameOf(first);
    std::optional<RowFrame> other = rowFrameOf(second);
    if (!frame || !other || !(*frame == *other) || !fitsRow(first, second))
      return false;
    if (llvm::none_of(first.getInputs(), [&](Value v) {
          return llvm::is_contained(second.getInputs(), v);
        }))
      return false;
    if (maxOps > 0 && opCount(first) + opCount(second) > maxOps)
      return false;
    int64_t from = schedule.position.lookup(first);
    int64_t at = schedule.position.lookup(second);
    for (Operation *user : first->getUsers())
      if (schedule.position.lookup(user) <= at)
        return false;
    if (schedule.writeBetween(from, at, first.getInputs()) ||
        updatesWhatItReads(first, second))
      return false;
    for (StringRef attr : {kRecomputedFromAttr, kCompressedAttr})
      if (first->hasAttr(attr) != second->hasAttr(attr))
        return false;
    return llvm::all_of(first.getInputs(), [&](Value input) {
      Value root = bufferRoot(input);
      return outsideArena(root) || schedule.lastUse.lookup(root) >= at;
    });
  }

  /// The kernel that reads `producer`'s results first, when every other
  /// reader comes after it (so the merged kernel, at its place, can hand
  /// them the results); else null.
  static KernelOp firstConsumer(KernelOp producer,
                                DenseMap<Operation *, int64_t> &position) {
    KernelOp consumer;
    int64_t first = INT64_MAX;
    for (Operation *user : producer->getUsers())
      if (position.lookup(user) < first) {
        first = position.lookup(user);
        consumer = dyn_cast<KernelOp>(user);
      }
    if (!consumer)
      return {};
    for (Operation *user : producer->getUsers())
      if (user != consumer && position.lookup(user) <= first)
        return {};
    return consumer;
  }

  /// Whether `producer` has results that ops other than `consumer` read.
  static bool readElsewhere(KernelOp producer, KernelOp consumer) {
    return llvm::any_of(producer->getUsers(),
                        [&](Operation *user) { return user != consumer; });
  }

  /// Whether pointwise kernels merge as one pointwise kernel: the
  /// producer's results exist at the consumer's index only, so they must
  /// have its shape, and only its element-wise ops may read them (data
  /// movement reads kernel inputs).
  static bool fitsPointwise(KernelOp producer, KernelOp consumer) {
    if (!isPointwise(producer) || !isPointwise(consumer))
      return false;
    ArrayRef<int64_t> domain =
        cast<RankedTensorType>(consumer->getResult(0).getType()).getShape();
    for (Type type : producer->getResultTypes())
      if (cast<RankedTensorType>(type).getShape() != domain)
        return false;
    for (auto [i, input] : llvm::enumerate(consumer.getInputs())) {
      if (input.getDefiningOp() != producer)
        continue;
      for (Operation *user : consumer.getBodyBlock().getArgument(i).getUsers())
        if (!isScalarOp(user))
          return false;
    }
    return true;
  }

  /// Whether every op of `kernel` belongs in a row kernel of `frame`:
  /// reductions of that frame, element-wise ops computing full or row
  /// values, constants.
  static bool fitsFrame(KernelOp kernel, const RowFrame &frame) {
    return llvm::all_of(kernel.getBodyOps(), [&](Operation &op) {
      if (isa<ConstantOp>(op))
        return true;
      if (isRowOp(&op)) {
        std::optional<RowFrame> own = rowFrameOf(&op);
        return own && *own == frame;
      }
      if (!isScalarOp(&op) || op.getNumResults() != 1)
        return false;
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(op.getResult(0).getType()).getShape();
      return shape == ArrayRef<int64_t>(frame.full) || frame.isRowShape(shape);
    });
  }

  /// Whether the kernels merge as one row kernel (a reduction with its
  /// element-wise prologue or epilogue, or reductions of one frame in
  /// sequence). A row kernel runs a block per row: element-wise work joins
  /// one only where there are enough rows to fill a GPU (or little work).
  /// A column sum's block reads its column with a stride, as the reduction
  /// template does, and so does its prologue (on the host this measured no
  /// slower than the pointwise kernel before it; a GPU would want a tiled
  /// column template).
  static bool fitsRow(KernelOp producer, KernelOp consumer) {
    std::optional<RowFrame> frame = rowFrameOf(consumer);
    if (!frame)
      frame = rowFrameOf(producer);
    if (!frame || !fitsFrame(producer, *frame) || !fitsFrame(consumer, *frame))
      return false;
    constexpr int64_t kMinRows = 64, kSmall = 1 << 16;
    return frame->rows >= kMinRows || getNumElements(frame->full) <= kSmall;
  }

  bool canFuse(KernelOp producer, KernelOp consumer, const Schedule &schedule) {
    if (maxOps > 0 && opCount(producer) + opCount(consumer) > maxOps)
      return false;
    bool pointwise = fitsPointwise(producer, consumer);
    if (!pointwise && !(rows && fitsRow(producer, consumer)))
      return false;
    // Only a pointwise kernel may read a parameter that it updates in
    // place (each element is read before it is written).
    if (!pointwise && updatesWhatItReads(producer, consumer))
      return false;
    // A result that others read too becomes the merged kernel's: the
    // memory plan tells recomputed and compressed values by their kernel's
    // attributes, which are the consumer's.
    if (readElsewhere(producer, consumer))
      for (StringRef attr : {kRecomputedFromAttr, kCompressedAttr})
        if (producer->hasAttr(attr) != consumer->hasAttr(attr))
          return false;
    // The merged kernel runs where the consumer does: no in-place update
    // of what the producer reads may come between.
    int64_t from = schedule.position.lookup(producer);
    if (schedule.writeBetween(from, schedule.position.lookup(consumer),
                              producer.getInputs()))
      return false;
    // Nor may it keep more bytes live: the producer's inputs that it read
    // last now live until the consumer, in place of its results that only
    // the consumer reads (results that others read too are still written,
    // by the merged kernel, and live from the consumer's step on).
    // Or, when it does, the bytes live at no step between the two exceed
    // the most the step holds anywhere (its peak is where it was).
    int64_t at = schedule.position.lookup(consumer);
    int64_t extended = 0, freed = 0;
    SmallVector<Schedule::LiveChange> changes;
    llvm::SmallPtrSet<Value, 8> seen;
    for (Value input : producer.getInputs()) {
      Value root = bufferRoot(input);
      if (!seen.insert(root).second || outsideArena(root) ||
          schedule.lastUse.lookup(root) > from)
        continue;
      extended += bytesOf(root);
      changes.push_back({from + 1, at, bytesOf(root)});
    }
    for (Value result : producer->getResults()) {
      if (llvm::all_of(result.getUsers(),
                       [&](Operation *user) { return user == consumer; })) {
        freed += bytesOf(result);
        changes.push_back({from, at, -bytesOf(result)});
      } else {
        // Written at the consumer's step instead of the producer's.
        changes.push_back({from, at - 1, -bytesOf(result)});
      }
    }
    if (extended > freed && !schedule.fitsPeak(changes, from, at))
      return false;
    pendingChanges = std::move(changes);
    return true;
  }

  /// The live-byte changes of the merge canFuse last accepted.
  SmallVector<Schedule::LiveChange> pendingChanges;

  /// A kernel at `consumer`'s place that computes `producer`'s body, then
  /// `consumer`'s, and yields `consumer`'s results, then those of
  /// `producer`'s results that other ops read. The two are unlinked from
  /// the block and added to `unlinked`, for the caller to destroy.
  static KernelOp fuseInto(KernelOp producer, KernelOp consumer,
                           SmallVectorImpl<Operation *> &unlinked) {
    MergedKernel parts;
    for (Value v : producer.getInputs())
      parts.addInput(v);
    for (Value v : consumer.getInputs())
      if (v.getDefiningOp() != producer)
        parts.addInput(v);

    SmallVector<OpResult> kept; // the producer's results read elsewhere
    for (OpResult result : producer->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return user != consumer; }))
        kept.push_back(result);
    SmallVector<Type> types(consumer->getResultTypes());
    for (OpResult result : kept)
      types.push_back(result.getType());

    OpBuilder builder(consumer);
    KernelOp merged = parts.create(builder, consumer.getLoc(), types);
    copyMemfitAttrs(consumer, merged);
    IRMapping first;
    SmallVector<Value> produced = parts.clone(builder, producer, first);
    // The consumer reads the producer's results as computed in the body.
    IRMapping second;
    for (auto [i, v] : llvm::enumerate(consumer.getInputs()))
      if (auto result = dyn_cast<OpResult>(v);
          result && result.getOwner() == producer)
        second.map(consumer.getBodyBlock().getArgument(i),
                   produced[result.getResultNumber()]);
    SmallVector<Value> yielded = parts.clone(builder, consumer, second);
    for (OpResult result : kept)
      yielded.push_back(produced[result.getResultNumber()]);
    YieldOp::create(builder, consumer.getLoc(), yielded);

    unsigned n = consumer->getNumResults();
    consumer->replaceAllUsesWith(merged->getResults().take_front(n));
    for (auto [i, result] : llvm::enumerate(kept))
      result.replaceAllUsesWith(merged->getResult(n + i));
    for (Operation *op : {consumer.getOperation(), producer.getOperation()}) {
      op->dropAllReferences();
      op->remove();
      unlinked.push_back(op);
    }
    return merged;
  }
};

/// memfit-fuse's first rewrite on its own, which the training pipeline runs
/// before memfit-remat: remat then plans the step without the copies.
struct MemfitFoldTransposesPass
    : public mlir::memfit::impl::MemfitFoldTransposesPassBase<
          MemfitFoldTransposesPass> {
  void runOnOperation() override {
    MemfitFusePass::foldTransposes(getOperation());
  }
};

} // namespace
