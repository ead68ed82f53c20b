//===- DropoutStep.cpp - memfit-dropout-step: a new mask every step -------===//
//
// A dropout's keep decision depends on its seed, its stream, the element's
// index and its step operand (DropoutOpInterface), step 0 when the op has
// none. This pass gives every op of a function that drops elements and has
// no step yet the function's counter: the training state `dropout_step`
// (0-d i64, role counter), read once at the start of the function and
// incremented at its end. Every call of the function then draws new masks;
// the forward, its recomputations and the gradient read the same value
// and draw the same ones; the checkpoint holds the counter, so that a
// resumed run draws what the uninterrupted one drew.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITDROPOUTSTEPPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

struct MemfitDropoutStepPass
    : public mlir::memfit::impl::MemfitDropoutStepPassBase<
          MemfitDropoutStepPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The ops of each function that drop elements and have no step.
    SmallVector<std::pair<func::FuncOp, SmallVector<DropoutOpInterface>>>
        work;
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<DropoutOpInterface> ops;
      func.walk([&](DropoutOpInterface op) {
        if (op.dropsElements() && !op.getDropoutStep())
          ops.push_back(op);
      });
      if (!ops.empty())
        work.emplace_back(func, std::move(ops));
    }
    if (work.empty())
      return;

    // One counter for the module, after its last parameter.
    Operation *after = nullptr;
    for (auto param : module.getOps<ParameterOp>())
      after = param;
    if (!after)
      after = &module.getBody()->front();
    SymbolTable symbols(module);
    auto stepType =
        RankedTensorType::get({}, IntegerType::get(&getContext(), 64));
    ParameterOp counter = addTrainingState(symbols, after, "dropout_step",
                                           stepType, kRoleCounter);
    auto name = FlatSymbolRefAttr::get(counter.getSymNameAttr());

    for (auto &[func, ops] : work) {
      if (!func.getBody().hasOneBlock()) {
        func.emitError("memfit-dropout-step: a function of ")
            << func.getBody().getBlocks().size()
            << " blocks; expected one, as memfit-autodiff makes";
        return signalPassFailure();
      }
      Block &body = func.getBody().front();
      OpBuilder builder = OpBuilder::atBlockBegin(&body);
      Location loc = func.getLoc();
      Value step = LoadParameterOp::create(builder, loc, stepType, name);
      for (DropoutOpInterface op : ops)
        op.setDropoutStep(step);
      // The next call's step, written after every read of this one.
      builder.setInsertionPoint(body.getTerminator());
      Value next = AddOp::create(builder, loc, step,
                                 splatConstant(builder, loc, stepType, 1.0));
      AssignOp::create(builder, loc, name, next);
    }
  }
};

} // namespace
