//===- FormKernels.cpp - wrap ops that need generated code in kernels ------===//

#include "memfit/Analysis/MemoryPlan.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITFORMKERNELSPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// Whether `op` becomes generated code: an op computed from its index
/// (IndexMapping: range too, whose class is Constant) or of a class that
/// computes.
bool needsKernel(Operation *op) {
  if (isIndexMapping(op))
    return true;
  auto opClass = dyn_cast<OpClassInterface>(op);
  if (!opClass || isBufferView(op))
    return false;
  switch (opClass.getOpClass()) {
  case OpClass::ElementWise:
  case OpClass::Reduction:
  case OpClass::Normalization:
  case OpClass::DataMovement:
  case OpClass::Loss:
  case OpClass::Quantization:
  case OpClass::Attention:
    return true;
  case OpClass::Contraction:
  case OpClass::Constant:
  case OpClass::Collective:
    return false;
  }
  return false;
}

/// A constant that the emitter can write as a literal.
bool isSplatConstant(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
  return elements && elements.isSplat();
}

void wrapInKernel(Operation *op, OpBuilder &builder) {
  llvm::SetVector<Value> inputs;
  SmallVector<Operation *> splats;
  bool literals = kernelTakesLiterals(op);
  for (Value operand : op->getOperands()) {
    if (literals && isSplatConstant(operand))
      splats.push_back(operand.getDefiningOp());
    else
      inputs.insert(operand);
  }

  builder.setInsertionPoint(op);
  auto kernel = KernelOp::create(builder, op->getLoc(), op->getResultTypes(),
                                 inputs.getArrayRef());
  Block *body = builder.createBlock(&kernel.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  builder.setInsertionPointToStart(body);
  for (Operation *splat : splats)
    if (!mapping.contains(splat->getResult(0)))
      builder.clone(*splat, mapping);
  Operation *clone = builder.clone(*op, mapping);
  YieldOp::create(builder, op->getLoc(), clone->getResults());
  op->replaceAllUsesWith(kernel.getResults());
  op->erase();
  for (Operation *splat : splats)
    if (splat->use_empty())
      splat->erase();
}

struct MemfitFormKernelsPass
    : public mlir::memfit::impl::MemfitFormKernelsPassBase<MemfitFormKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    for (Operation &op : getOperation().getBody().getOps())
      if (needsKernel(&op))
        ops.push_back(&op);
    OpBuilder builder(&getContext());
    for (Operation *op : ops)
      wrapInKernel(op, builder);
  }
};

} // namespace
