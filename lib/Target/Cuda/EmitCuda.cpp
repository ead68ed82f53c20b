//===- EmitCuda.cpp - executable emission: kernels, plan, call sequence ----===//
//
// Builds the runtime's executable from a function formed into kernels: the
// memory plan gives every value a buffer (views share their source's), the
// weights region is filled from parameters and constants, each kernel is
// written as CUDA C++ by KernelWriter from its ops' KernelEmitterOpInterface
// models, and matmul/gemm become
// contractions that the runtime hands to cuBLASLt or a host BLAS.
//
//===----------------------------------------------------------------------===//

#include "memfit/Target/Cuda/EmitCuda.h"

#include "ElementTypes.h"
#include "KernelEmitter.h"
#include "KernelEmitterInterface.h"
#include "ManifestValues.h"
#include "StepCosts.h"
#include "memfit/Analysis/Epilogues.h"
#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Analysis/Traffic.h"
#include "memfit/Dialect/MemfitDialect.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/ShapeInference.h"
#include "memfit/Dialect/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace mlir;
using namespace mlir::memfit;
using cuda::describeValue;
using cuda::toDType;
using cuda::writeElements;

namespace {

class ExecutableBuilder {
public:
  ExecutableBuilder(ModuleOp module, ArrayRef<func::FuncOp> funcs,
                    rt::Executable &exe)
      : module(module), funcs(funcs), exe(exe), manifest(exe.manifest),
        symbols(module) {}

  LogicalResult build(const CudaEmitOptions &options);

private:
  FailureOr<uint32_t> bufferId(Value value);
  LogicalResult emitFunction(func::FuncOp func, unsigned index);
  void addMemoryReport();
  LogicalResult emitKernelStep(KernelOp kernel);
  FailureOr<rt::Kernel> emitKernelSource(KernelOp kernel,
                                         SmallVectorImpl<Value> &buffers);
  LogicalResult emitEpilogueKernel(KernelOp kernel, GemmOp gemm,
                                   rt::Epilogue epilogue);
  LogicalResult addKernelStep(Operation *op, rt::Kernel kernel,
                              ArrayRef<Value> buffers);
  FailureOr<uint32_t> indexErrorBuffer(Operation *kernel);
  LogicalResult emitMatMul(MatMulOp op);
  LogicalResult emitGemm(GemmOp op);
  LogicalResult addContraction(Operation *op, rt::Contraction contraction,
                               Value a, Value b, Value out,
                               Value vector = Value(),
                               Value activated = Value());
  LogicalResult emitCollective(Operation *op);

  ModuleOp module;
  ArrayRef<func::FuncOp> funcs;
  func::FuncOp func; // the one being emitted
  rt::Executable &exe;
  rt::Manifest &manifest;
  SymbolTable symbols;
  ModulePlan modulePlan;
  const MemoryPlan *plan = nullptr; // of `func`
  DenseMap<Value, uint32_t> ids;
  std::string source;
  llvm::raw_string_ostream sourceOs{source};
  unsigned kernelCount = 0;
  /// The bias-gradient kernel (memfit.epilogue) that the next gemm runs as
  /// its epilogue: its fallback kernel, its sums and the epilogue.
  struct PendingEpilogue {
    GemmOp gemm;
    uint32_t kernel = rt::kNoKernel;
    Value sums;
    rt::Epilogue epilogue = rt::Epilogue::None;
  };
  std::optional<PendingEpilogue> pendingEpilogue;
  /// The GELU kernel after the gemm being emitted that it computes as its
  /// GELU_AUX_BIAS epilogue (Epilogues.h, activatesGemm); the kernel then
  /// has no step of its own.
  KernelOp pendingActivation;
};

FailureOr<uint32_t> ExecutableBuilder::bufferId(Value value) {
  if (auto it = ids.find(value); it != ids.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  FailureOr<rt::DType> dtype = toDType(type.getElementType());
  if (failed(dtype)) {
    Operation *owner = value.getDefiningOp() ? value.getDefiningOp()
                                             : func.getOperation();
    return owner->emitError() << "the runtime has no element type for "
                              << type,
           failure();
  }
  const PlannedBuffer &planned = plan->bufferFor(value);
  rt::Buffer buffer;
  buffer.name = describeValue(value);
  buffer.region = planned.region == BufferRegion::Weights ? rt::Region::Weights
                   : planned.region == BufferRegion::Host  ? rt::Region::Host
                                                           : rt::Region::Arena;
  buffer.offset = planned.offset;
  buffer.bytes = tensorBytes(type);
  buffer.dtype = *dtype;
  buffer.shape.assign(type.getShape().begin(), type.getShape().end());
  manifest.buffers.push_back(std::move(buffer));
  uint32_t id = manifest.buffers.size() - 1;
  ids[value] = id;
  return id;
}

/// Whether every result of `op` is empty (a zero-sized dimension): such an
/// op has nothing to compute and gets no step.
bool producesNothing(Operation *op) {
  return op->getNumResults() && llvm::all_of(op->getResultTypes(), [](Type type) {
    return cast<RankedTensorType>(type).getNumElements() == 0;
  });
}

/// The kernel's CUDA source, written out, and its manifest entry; `buffers`
/// gets the values its parameters are the buffers of.
FailureOr<rt::Kernel>
ExecutableBuilder::emitKernelSource(KernelOp kernel,
                                    SmallVectorImpl<Value> &buffers) {
  FailureOr<rt::Kernel> info =
      cuda::emitKernel(kernel, kernelCount++, sourceOs);
  if (failed(info))
    return failure();
  info->kind = cuda::kernelKind(kernel);
  info->onHost = kernel->hasAttr(kOnHostAttr);
  info->toDevice = kernel->hasAttr(kToDeviceAttr);
  // The copies between device and host memory that the steps after them
  // need not wait for: an offloaded activation's, and a value the host's
  // update reads (the host task waits for it in its queue).
  info->copyQueue = kernel->hasAttr(kOffloadedAttr) ||
                    kernel->hasAttr(kFetchedAttr) ||
                    kernel->hasAttr(kToHostAttr);
  info->cost = cuda::stepCost(kernel);
  // A view's kernel reads the viewed value's buffer at the view's offset
  // and strides (KernelWriter::viewOf).
  for (Value input : kernel.getInputs()) {
    if (auto view = input.getDefiningOp<StridedViewOp>())
      input = view.getInput();
    buffers.push_back(input);
  }
  llvm::append_range(buffers, kernel.getResults());
  return info;
}

LogicalResult ExecutableBuilder::emitKernelStep(KernelOp kernel) {
  if (producesNothing(kernel))
    return success();
  SmallVector<Value> buffers;
  FailureOr<rt::Kernel> info = emitKernelSource(kernel, buffers);
  if (failed(info))
    return failure();
  return addKernelStep(kernel, std::move(*info), buffers);
}

/// A bias-gradient kernel that `gemm`, the next step, computes as its
/// epilogue: the kernel's source is the fallback, with no step of its own.
/// Its parameters, {the summed operand, the sums}, are the runtime's
/// order for a fallback (Manifest.h, Epilogue).
LogicalResult ExecutableBuilder::emitEpilogueKernel(KernelOp kernel,
                                                    GemmOp gemm,
                                                    rt::Epilogue epilogue) {
  SmallVector<Value> buffers;
  FailureOr<rt::Kernel> info = emitKernelSource(kernel, buffers);
  if (failed(info))
    return failure();
  pendingEpilogue =
      PendingEpilogue{gemm, static_cast<uint32_t>(manifest.kernels.size()),
                      kernel.getResult(0), epilogue};
  manifest.kernels.push_back(std::move(*info));
  return success();
}

LogicalResult ExecutableBuilder::addKernelStep(Operation *op, rt::Kernel kernel,
                                               ArrayRef<Value> buffers) {
  rt::Step step;
  step.kind = rt::StepKind::Kernel;
  step.index = manifest.kernels.size();
  for (Value value : buffers) {
    FailureOr<uint32_t> id = bufferId(value);
    if (failed(id))
      return failure();
    step.buffers.push_back(*id);
  }
  // A kernel that checks indices takes the index-error word last.
  if (!kernel.indexChecks.empty()) {
    FailureOr<uint32_t> word = indexErrorBuffer(op);
    if (failed(word))
      return failure();
    step.buffers.push_back(*word);
  }
  manifest.kernels.push_back(std::move(kernel));
  manifest.entries.back().steps.push_back(std::move(step));
  return success();
}

/// The index-error word (rt::IndexError) where the memory plan reserved it,
/// made a buffer on first use.
FailureOr<uint32_t> ExecutableBuilder::indexErrorBuffer(Operation *kernel) {
  if (manifest.indexErrorBuffer != rt::kNoBuffer)
    return manifest.indexErrorBuffer;
  static_assert(sizeof(rt::IndexError) == kIndexErrorWordBytes,
                "the plan reserves the runtime's index-error word");
  if (modulePlan.indexErrorOffset < 0)
    return kernel->emitError() << "the kernel checks indices, but the memory "
                                  "plan reserved no index-error word (an op "
                                  "without the ChecksIndices trait checks "
                                  "them)",
           failure();
  rt::Buffer buffer;
  buffer.name = "memfit.index_error";
  buffer.region = rt::Region::Weights;
  buffer.offset = modulePlan.indexErrorOffset;
  buffer.bytes = sizeof(rt::IndexError);
  buffer.dtype = rt::DType::u64;
  buffer.shape = {2};
  manifest.buffers.push_back(std::move(buffer));
  manifest.indexErrorBuffer = manifest.buffers.size() - 1;
  return manifest.indexErrorBuffer;
}

LogicalResult ExecutableBuilder::addContraction(Operation *op,
                                                rt::Contraction contraction,
                                                Value a, Value b, Value out,
                                                Value vector, Value activated) {
  Type elt = cast<RankedTensorType>(out.getType()).getElementType();
  if (!elt.isF32() && !elt.isF64() && !cuda::isHalfFloat(elt))
    return op->emitError() << "contractions run in f32, f64, f16 or bf16, not "
                           << elt;
  if (producesNothing(op))
    return success();
  if (contraction.k == 0)
    return op->emitError() << "a contraction over an empty dimension (k = 0) "
                              "is not supported";
  contraction.dtype = *toDType(elt);
  contraction.name = llvm::formatv("c{0}_{1}", manifest.contractions.size(),
                                   op->getName().stripDialect())
                         .str();
  cuda::collectNodeNames(op->getLoc(), contraction.onnxNodes);
  contraction.cost = cuda::stepCost(op);
  rt::Step step;
  step.kind = rt::StepKind::Contraction;
  step.index = manifest.contractions.size();
  SmallVector<Value, 5> operands = {a, b, out};
  if (vector)
    operands.push_back(vector);
  if (activated)
    operands.push_back(activated);
  for (Value value : operands) {
    // A strided view's offset and strides are the contraction's: it passes
    // the buffer of the value viewed.
    if (auto view = value.getDefiningOp<StridedViewOp>())
      value = view.getInput();
    FailureOr<uint32_t> id = bufferId(value);
    if (failed(id))
      return failure();
    step.buffers.push_back(*id);
  }
  manifest.contractions.push_back(std::move(contraction));
  manifest.entries.back().steps.push_back(std::move(step));
  return success();
}

LogicalResult ExecutableBuilder::emitMatMul(MatMulOp op) {
  SmallVector<int64_t> lhs(op.getLhs().getType().getShape());
  SmallVector<int64_t> rhs(op.getRhs().getType().getShape());
  // Where each operand's elements are: a strided view's offset and
  // strides in its input's buffer, else packed. A 1-D operand is promoted
  // to a matrix (no view or result_perm has one).
  auto layout = [](Value v, ArrayRef<int64_t> shape, int64_t &offset) -> Shape {
    offset = 0;
    if (auto view = v.getDefiningOp<StridedViewOp>()) {
      offset = view.getOffset();
      return Shape(view.getStrides());
    }
    return stridesOf(shape);
  };
  rt::Contraction c;
  Shape lhsStrides = layout(op.getLhs(), lhs, c.offsets[0]);
  Shape rhsStrides = layout(op.getRhs(), rhs, c.offsets[1]);
  if (lhs.size() == 1) {
    lhs.insert(lhs.begin(), 1);
    lhsStrides.insert(lhsStrides.begin(), lhs.back());
  }
  if (rhs.size() == 1) {
    rhs.push_back(1);
    rhsStrides.push_back(1);
  }
  // A transposed operand's matrix is stored [k, m] ([n, k]); the library
  // reads it with its transpose flag. A matrix whose columns are apart
  // and whose rows are adjacent (a view of a transpose) is the transpose
  // of a stored one: the flag flips.
  c.transA = op.getTransA();
  c.transB = op.getTransB();
  auto leading = [&](SmallVector<int64_t> &shape, Shape &strides, bool &trans,
                     int64_t &ld) -> LogicalResult {
    size_t r = shape.size();
    if (strides[r - 1] != 1 && shape[r - 1] > 1) {
      if (strides[r - 2] != 1 && shape[r - 2] > 1)
        return op.emitError() << "a contraction operand with neither its rows "
                                 "nor its columns adjacent is not supported";
      std::swap(shape[r - 1], shape[r - 2]);
      std::swap(strides[r - 1], strides[r - 2]);
      trans = !trans;
    }
    ld = shape[r - 2] <= 1 ? std::max<int64_t>(shape[r - 1], 1)
                           : strides[r - 2];
    if (ld < shape[r - 1])
      return op.emitError() << "a contraction operand whose rows overlap "
                               "(rows "
                            << ld << " elements apart, " << shape[r - 1]
                            << " columns) is not supported";
    return success();
  };
  if (failed(leading(lhs, lhsStrides, c.transA, c.ld[0])) ||
      failed(leading(rhs, rhsStrides, c.transB, c.ld[1])))
    return failure();
  c.m = lhs[lhs.size() - (c.transA ? 1 : 2)];
  c.k = lhs[lhs.size() - (c.transA ? 2 : 1)];
  c.n = rhs[rhs.size() - (c.transB ? 2 : 1)];
  size_t rank = std::max(lhs.size(), rhs.size()) - 2;
  // Each operand's stride of each batch dimension, 0 where it is broadcast
  // (missing or of size 1).
  auto batchStrides = [&](ArrayRef<int64_t> shape, ArrayRef<int64_t> strides) {
    SmallVector<int64_t> result(rank, 0);
    size_t batch = shape.size() - 2;
    for (size_t d = 0; d < batch; ++d)
      result[rank - batch + d] = shape[d] == 1 ? 0 : strides[d];
    return result;
  };
  for (size_t d = 0; d < rank; ++d) {
    auto extent = [&](ArrayRef<int64_t> shape) -> int64_t {
      size_t batch = shape.size() - 2;
      return d + batch >= rank ? shape[d + batch - rank] : 1;
    };
    c.batchShape.push_back(std::max(extent(lhs), extent(rhs)));
  }
  auto a = batchStrides(lhs, lhsStrides);
  auto b = batchStrides(rhs, rhsStrides);
  c.batchStridesA.assign(a.begin(), a.end());
  c.batchStridesB.assign(b.begin(), b.end());
  // The result: packed, or the product's dimensions transposed by
  // result_perm (which keeps the columns last; its operands have rank 2 or
  // more): each product dimension's stride is its place's in the result.
  if (std::optional<ArrayRef<int64_t>> perm = op.getResultPerm()) {
    Shape placed = stridesOf(op.getType().getShape());
    SmallVector<int64_t> product(placed.size());
    for (auto [place, d] : llvm::enumerate(*perm))
      product[d] = placed[place];
    c.ld[2] = c.m <= 1 ? c.n : product[rank];
    for (size_t d = 0; d < rank; ++d)
      c.batchStridesOut.push_back(c.batchShape[d] == 1 ? 0 : product[d]);
  } else {
    int64_t ldA = c.ld[0], ldB = c.ld[1];
    c.setPackedLayout();
    c.ld[0] = ldA;
    c.ld[1] = ldB;
  }
  return addContraction(op, std::move(c), op.getLhs(), op.getRhs(),
                        op.getResult());
}

/// Whether `gemm` adds a `c` of one row (n elements) with beta 1: what
/// cuBLASLt's bias epilogues add.
static bool rowBiased(GemmOp gemm) {
  Value bias = gemm.getC();
  if (!bias || gemm.getBeta().convertToFloat() != 1.0f ||
      bias.getDefiningOp<StridedViewOp>())
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(bias.getType()).getShape();
  int64_t n = gemm.getType().getShape()[1];
  return cast<RankedTensorType>(bias.getType()).getNumElements() == n &&
         (shape.size() == 1 || (shape.size() == 2 && shape[0] == 1));
}

LogicalResult ExecutableBuilder::emitGemm(GemmOp op) {
  ArrayRef<int64_t> a = op.getA().getType().getShape();
  ArrayRef<int64_t> b = op.getB().getType().getShape();
  rt::Contraction c;
  c.transA = op.getTransA();
  c.transB = op.getTransB();
  c.m = c.transA ? a[1] : a[0];
  c.k = c.transA ? a[0] : a[1];
  c.n = c.transB ? b[0] : b[1];
  c.setPackedLayout();
  // A or B read in place from a larger buffer (memfit-fuse's views: a
  // chunk's rows of the hidden states) at the view's offset; the views are
  // packed, so the leading dimensions stay.
  Value operands[] = {op.getA(), op.getB()};
  for (auto [i, value] : llvm::enumerate(operands))
    if (auto view = value.getDefiningOp<StridedViewOp>())
      c.offsets[i] = static_cast<int64_t>(view.getOffset());
  c.alpha = op.getAlpha().convertToFloat();
  c.beta = 0.0f;
  // The bias-gradient kernel just before, as this gemm's epilogue.
  if (pendingEpilogue && pendingEpilogue->gemm == op) {
    c.epilogue = pendingEpilogue->epilogue;
    c.fallbackKernel = pendingEpilogue->kernel;
    Value sums = pendingEpilogue->sums;
    pendingEpilogue.reset();
    return addContraction(op, std::move(c), op.getA(), op.getB(),
                          op.getResult(), sums);
  }
  if (Value bias = op.getC()) {
    // The bias is broadcast into the output first; the contraction then
    // accumulates onto it with beta.
    auto biasType = cast<RankedTensorType>(bias.getType());
    FailureOr<rt::Kernel> info = cuda::emitBroadcastCopy(
        op, kernelCount++, biasType, op.getResult().getType(), sourceOs);
    if (failed(info))
      return failure();
    info->cost.bytes =
        uint64_t(tensorBytes(biasType) + tensorBytes(op.getType()));
    // A row of n elements added with beta 1 is cuBLASLt's bias epilogue;
    // the broadcast is its fallback kernel, with no step of its own.
    if (rowBiased(op)) {
      c.epilogue = rt::Epilogue::Bias;
      c.fallbackKernel = static_cast<uint32_t>(manifest.kernels.size());
      manifest.kernels.push_back(std::move(*info));
      Value activated;
      // The GELU after it (memfit.epilogue): GELU_AUX_BIAS, the sum kept
      // in the output; the GELU kernel its activation fallback.
      if (KernelOp gelu = pendingActivation) {
        SmallVector<Value> buffers;
        FailureOr<rt::Kernel> kernel = emitKernelSource(gelu, buffers);
        if (failed(kernel))
          return failure();
        c.epilogue = rt::Epilogue::GeluAuxBias;
        c.activationKernel = static_cast<uint32_t>(manifest.kernels.size());
        manifest.kernels.push_back(std::move(*kernel));
        activated = gelu.getResult(0);
      }
      return addContraction(op, std::move(c), op.getA(), op.getB(),
                            op.getResult(), bias, activated);
    }
    if (failed(addKernelStep(op, std::move(*info), {bias, op.getResult()})))
      return failure();
    c.beta = op.getBeta().convertToFloat();
  }
  return addContraction(op, std::move(c), op.getA(), op.getB(),
                        op.getResult());
}

/// A collective becomes a step the session runs through its communicator,
/// on the buffers of its operand and result.
LogicalResult ExecutableBuilder::emitCollective(Operation *op) {
  Value in = op->getOperand(0), out = op->getResult(0);
  auto type = cast<RankedTensorType>(in.getType());
  rt::Collective c;
  c.dtype = *toDType(type.getElementType());
  c.count = static_cast<uint64_t>(type.getNumElements());
  auto group = [&](int64_t size, std::optional<ArrayRef<int64_t>> ranks) {
    c.groupSize = size;
    if (ranks)
      c.ranks.assign(ranks->begin(), ranks->end());
  };
  auto reduction = [](CollectiveReduction r) {
    switch (r) {
    case CollectiveReduction::Sum:
      return rt::Collective::Reduction::Sum;
    case CollectiveReduction::Mean:
      return rt::Collective::Reduction::Mean;
    case CollectiveReduction::Max:
      return rt::Collective::Reduction::Max;
    case CollectiveReduction::Min:
      return rt::Collective::Reduction::Min;
    }
    return rt::Collective::Reduction::Sum;
  };
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    c.kind = rt::Collective::Kind::AllReduce;
    c.reduction = reduction(reduce.getReduction());
    group(reduce.getGroupSize(), reduce.getRanks());
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    c.kind = rt::Collective::Kind::ReduceScatter;
    c.reduction = reduction(scatter.getReduction());
    group(scatter.getGroupSize(), scatter.getRanks());
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    c.kind = rt::Collective::Kind::AllGather;
    group(gather.getGroupSize(), gather.getRanks());
  } else {
    auto broadcast = cast<BroadcastOp>(op);
    c.kind = rt::Collective::Kind::Broadcast;
    c.root = static_cast<int64_t>(broadcast.getRoot());
    group(broadcast.getGroupSize(), broadcast.getRanks());
  }
  if (c.groupSize > manifest.worldSize)
    return op->emitError() << "a collective over " << c.groupSize
                           << " ranks in a step compiled for "
                           << manifest.worldSize
                           << " (the module's memfit.world_size)";
  c.name = llvm::formatv("x{0}_{1}", manifest.collectives.size(),
                         op->getName().stripDialect())
               .str();
  cuda::collectNodeNames(op->getLoc(), c.onnxNodes);
  rt::Step step;
  step.kind = rt::StepKind::Collective;
  step.index = manifest.collectives.size();
  for (Value value : {in, out}) {
    FailureOr<uint32_t> id = bufferId(value);
    if (failed(id))
      return failure();
    step.buffers.push_back(*id);
  }
  manifest.collectives.push_back(std::move(c));
  manifest.entries.back().steps.push_back(std::move(step));
  return success();
}

LogicalResult ExecutableBuilder::emitFunction(func::FuncOp f, unsigned index) {
  func = f;
  plan = &modulePlan.functions[index];
  rt::Entry &entry = manifest.entries.emplace_back();
  entry.name = func.getSymName().str();
  entry.boundBytes =
      uint64_t(std::max<int64_t>(stepTraffic(*plan).lowerBound(), 0));
  ArrayRef<Operation *> schedule = plan->schedule;
  for (auto [i, op] : llvm::enumerate(schedule)) {
    auto kernel = dyn_cast<KernelOp>(op);
    GemmOp next =
        i + 1 < schedule.size() ? dyn_cast<GemmOp>(schedule[i + 1]) : GemmOp();
    // memfit-fuse's GELU after a gemm with a bias, checked again: the gemm
    // takes it as its GELU_AUX_BIAS (emitGemm), and it has no step.
    if (kernel && kernel == pendingActivation)
      continue;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      auto after = i + 1 < schedule.size() ? dyn_cast<KernelOp>(schedule[i + 1])
                                           : KernelOp();
      bool pairs = after && activatesGemm(after, gemm) && rowBiased(gemm) &&
                   !producesNothing(gemm) && !producesNothing(after);
      pendingActivation = pairs ? after : KernelOp();
    }
    // memfit-fuse's bias-gradient kernel before its gemm, checked again.
    if (kernel && next && kernel->hasAttr(kEpilogueAttr) &&
        !producesNothing(kernel) && !producesNothing(next)) {
      SummedOperand summed = summedOperand(kernel, next);
      if (summed != SummedOperand::None) {
        if (failed(emitEpilogueKernel(kernel, next,
                                      summed == SummedOperand::A
                                          ? rt::Epilogue::BiasGradA
                                          : rt::Epilogue::BiasGradB)))
          return failure();
        continue;
      }
    }
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](KernelOp kernel) { return emitKernelStep(kernel); })
            .Case([&](MatMulOp matmul) { return emitMatMul(matmul); })
            .Case([&](GemmOp gemm) { return emitGemm(gemm); })
            .Case<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp>(
                [&](Operation *collective) {
                  return emitCollective(collective);
                })
            .Default([](Operation *other) {
              return other->emitError() << "unexpected op in the schedule";
            });
    if (failed(result))
      return failure();
  }

  for (BlockArgument arg : func.getArguments()) {
    FailureOr<uint32_t> id = bufferId(arg);
    if (failed(id))
      return failure();
    manifest.entries.back().inputs.push_back({describeValue(arg), *id});
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    FailureOr<uint32_t> id = bufferId(value);
    if (failed(id))
      return failure();
    std::string name = llvm::formatv("output{0}", i).str();
    if (auto attr = func.getResultAttrOfType<StringAttr>(i, "onnx.name"))
      name = attr.str();
    manifest.entries.back().outputs.push_back({name, *id});
  }
  return success();
}

/// Persistent bytes by category, and what is live in the arena at the
/// peak of the function with the largest one.
void ExecutableBuilder::addMemoryReport() {
  // Categories that only training has are left out when empty.
  auto always = [](BufferCategory category) {
    return category == BufferCategory::Parameter ||
           category == BufferCategory::Constant ||
           category == BufferCategory::Input ||
           category == BufferCategory::Output;
  };
  for (BufferCategory category :
       {BufferCategory::Parameter, BufferCategory::FrozenParameter,
        BufferCategory::WeightCodes, BufferCategory::WeightScales,
        BufferCategory::Constant, BufferCategory::GradientAccumulator,
        BufferCategory::OptimizerState, BufferCategory::StateCodes,
        BufferCategory::StateScales}) {
    int64_t bytes = modulePlan.weightsByCategory[unsigned(category)];
    if (bytes || always(category))
      manifest.memory.push_back({stringifyBufferCategory(category).str(),
                                 static_cast<uint64_t>(bytes)});
  }
  const MemoryPlan &peak = modulePlan.functions[modulePlan.peakFunction];
  // Mixed precision shows its working copies even when none is live at the
  // peak, a training step its loss, chunked or not, and a data-parallel
  // one what its collectives receive: the categories that some function of
  // the module has.
  auto planned = [&](BufferCategory category) {
    return (category == BufferCategory::WorkingCopy ||
            category == BufferCategory::Loss ||
            category == BufferCategory::Communication) &&
           llvm::any_of(modulePlan.functions, [&](const MemoryPlan &plan) {
             return plan.categoryBytes(category) > 0;
           });
  };
  for (BufferCategory category :
       {BufferCategory::Input, BufferCategory::Output,
        BufferCategory::Activation, BufferCategory::Gradient,
        BufferCategory::SavedActivation, BufferCategory::CompressedActivation,
        BufferCategory::Recomputed, BufferCategory::Loss,
        BufferCategory::Temporary, BufferCategory::WorkingCopy,
        BufferCategory::Communication}) {
    int64_t bytes = peak.peakBytes[unsigned(category)];
    if (bytes || always(category) || planned(category))
      manifest.memory.push_back({stringifyBufferCategory(category).str(),
                                 static_cast<uint64_t>(bytes)});
  }
  manifest.memory.push_back({"weights region", manifest.weightsBytes});
  manifest.memory.push_back({"arena peak", manifest.arenaBytes});
  // What is kept in host memory, apart from the device's allocation.
  if (manifest.hostBytes) {
    for (unsigned c = 0; c < kNumBufferCategories; ++c)
      if (int64_t bytes = modulePlan.hostByCategory[c])
        manifest.memory.push_back(
            {rt::kHostCategoryPrefix +
                 stringifyBufferCategory(BufferCategory(c)).str(),
             static_cast<uint64_t>(bytes)});
    manifest.memory.push_back({rt::kHostRegionCategory, manifest.hostBytes});
  }
}

LogicalResult ExecutableBuilder::build(const CudaEmitOptions &options) {
  FailureOr<ModulePlan> planned = planModule(module, funcs);
  if (failed(planned))
    return failure();
  modulePlan = std::move(*planned);
  manifest.model = options.modelName;
  if (auto size = module->getAttrOfType<IntegerAttr>(kWorldSizeAttr))
    manifest.worldSize = size.getInt();
  if (auto zero = module->getAttrOfType<IntegerAttr>(kZeroStageAttr))
    manifest.zeroStage = zero.getInt();
  manifest.weightsBytes = modulePlan.weightsBytes;
  manifest.arenaBytes = modulePlan.arenaBytes;
  manifest.hostBytes = modulePlan.hostBytes;
  manifest.initializedHostBytes = modulePlan.initializedHostBytes;
  exe.planOnly = options.planOnly;
  if (!options.planOnly &&
      failed(cuda::fillWeights(module, modulePlan, exe.weights)))
    return failure();

  sourceOs << "// CUDA C++ generated by memfit.\n// One __global__ function "
              "per kernel; parameters are "
              "device pointers to the\n// kernel's input buffers followed "
              "by its output buffers.\n\n";
  // Whether any value is stored in 16-bit floats.
  bool halfTypes = false;
  auto check = [&](TypeRange types) {
    for (Type type : types)
      if (auto tensor = dyn_cast<RankedTensorType>(type))
        halfTypes |= cuda::isHalfFloat(tensor.getElementType());
  };
  module.walk([&](Operation *op) {
    check(op->getResultTypes());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        check(block.getArgumentTypes());
  });
  cuda::emitPrelude(sourceOs, halfTypes);
  cuda::emitQuantTables(sourceOs, module);
  for (auto [index, f] : llvm::enumerate(funcs))
    if (failed(emitFunction(f, index)))
      return failure();
  if (failed(cuda::addVariables(module, modulePlan, manifest)))
    return failure();
  addMemoryReport();
  manifest.source = std::move(source);

  rt::Status status = manifest.validate();
  if (!status.isOk())
    return module.emitError() << "emitted an invalid manifest: "
                              << status.message();
  return success();
}

/// The functions to emit as entries: the one named `entry`, else every
/// function with a body, in module order.
FailureOr<SmallVector<func::FuncOp>> findEntries(ModuleOp module,
                                                 StringRef entry) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (!entry.empty() && func.getSymName() != entry)
      continue;
    funcs.push_back(func);
  }
  if (funcs.empty())
    return module.emitError() << (entry.empty()
                                      ? std::string("no function with a body to emit")
                                      : "no function @" + entry.str() + " to emit"),
           failure();
  return funcs;
}

} // namespace

LogicalResult mlir::memfit::emitExecutable(ModuleOp module,
                                           const CudaEmitOptions &options,
                                           rt::Executable &executable) {
  // Every caller gets the ops' emitters, whatever it registered: appending
  // the extension again is a no-op.
  DialectRegistry registry;
  cuda::registerKernelEmitterInterfaces(registry);
  module->getContext()->appendDialectRegistry(registry);

  FailureOr<SmallVector<func::FuncOp>> funcs =
      findEntries(module, options.entry);
  if (failed(funcs))
    return failure();
  executable = rt::Executable();
  return ExecutableBuilder(module, *funcs, executable).build(options);
}

void mlir::memfit::registerCudaTranslations() {
  auto dialects = [](DialectRegistry &registry) {
    registry.insert<MemfitDialect, func::FuncDialect>();
    cuda::registerKernelEmitterInterfaces(registry);
  };
  static TranslateFromMLIRRegistration source(
      "memfit-to-cuda", "the CUDA C++ kernels of a memfit function",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        rt::Executable executable;
        if (!module || failed(emitExecutable(module, {}, executable)))
          return failure();
        os << executable.manifest.source;
        return success();
      },
      dialects);
  static TranslateFromMLIRRegistration manifest(
      "memfit-to-manifest", "the runtime manifest (JSON) of a memfit function",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        rt::Executable executable;
        if (!module || failed(emitExecutable(module, {}, executable)))
          return failure();
        os << rt::manifestToJson(executable.manifest);
        return success();
      },
      dialects);
}
