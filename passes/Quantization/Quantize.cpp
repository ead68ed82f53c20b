//===- Quantize.cpp - 8-bit block-wise optimizer states --------------------===//
//
// memfit-quantize optimizer-states=8bit: each large enough optimizer state
// becomes codes and per-block absmax states, and the update kernel that
// reads and writes it dequantizes at its start and quantizes at its end
// (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Quantization.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"
#include "memfit/Support/GlobList.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITQUANTIZEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// A state to quantize and what replaces it.
struct QuantizedState {
  ParameterOp state, codes, absmax;
  QuantScheme scheme;
};

struct MemfitQuantizePass
    : public memfit::impl::MemfitQuantizePassBase<MemfitQuantizePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (optimizerStates != "fp32" && optimizerStates != "8bit")
      return module.emitError("optimizer-states must be fp32 or 8bit, got '")
             << optimizerStates << "'";
    if (stateBlockSize < 1)
      return module.emitError("state-block-size must be positive, got ")
             << stateBlockSize;
    if (min8bitSize < 0)
      return module.emitError("min-8bit-size must not be negative");
    GlobList keep;
    std::string error;
    if (!keep.parse(keepFp32States, "keep-fp32-states", error))
      return module.emitError(error);
    if (optimizerStates == "fp32")
      return success();

    SymbolTable symbols(module);
    SmallVector<QuantizedState> chosen;
    bool anyState = false;
    for (auto param : llvm::make_early_inc_range(module.getOps<ParameterOp>())) {
      if (parameterRole(param) != kRoleOptimizerState)
        continue;
      anyState = true;
      auto owner = param->getAttrOfType<FlatSymbolRefAttr>(kStateOfAttr);
      RankedTensorType type = param.getType();
      if (!type.getElementType().isF32() ||
          type.getNumElements() < min8bitSize ||
          (owner && keep.match(owner.getValue())))
        continue;
      QuantizedState q;
      q.state = param;
      q.scheme = param->hasAttr(kNonNegativeAttr) ? QuantScheme::DynamicUnsigned
                                                  : QuantScheme::Dynamic;
      chosen.push_back(q);
    }
    if (!anyState)
      return module.emitError("optimizer-states=8bit: the module has no "
                              "optimizer state; run memfit-optimizer first");

    for (QuantizedState &q : chosen)
      if (failed(quantizeState(module, symbols, q)))
        return failure();
    return success();
  }

  /// Replaces `q.state` by its codes and absmax in every kernel that reads
  /// or writes it.
  LogicalResult quantizeState(ModuleOp module, SymbolTable &symbols,
                              QuantizedState &q) {
    MLIRContext *ctx = &getContext();
    RankedTensorType type = q.state.getType();
    int64_t n = type.getNumElements();
    int64_t blocks = quantBlockCount(n, stateBlockSize);
    auto codesType = RankedTensorType::get(
        {quantCodeBytes(q.scheme, n)}, quantCodeType(ctx, q.scheme));
    auto absmaxType =
        RankedTensorType::get({blocks}, Float32Type::get(ctx));
    StringRef name = q.state.getSymName();

    // Every use must be a load feeding kernels or an assign of a kernel
    // result: the update kernels memfit-optimizer builds.
    SmallVector<LoadParameterOp> loads;
    SmallVector<AssignOp> assigns;
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(q.state.getSymNameAttr(), module);
    for (const SymbolTable::SymbolUse &use : *uses) {
      Operation *user = use.getUser();
      if (auto load = dyn_cast<LoadParameterOp>(user)) {
        for (Operation *reader : load->getUsers())
          if (!isa<KernelOp>(reader))
            return reader->emitError("cannot store optimizer state '")
                   << name << "' in 8 bits: it is read outside a kernel";
        loads.push_back(load);
      } else if (auto assign = dyn_cast<AssignOp>(user)) {
        if (!assign.getValue().getDefiningOp<KernelOp>())
          return assign.emitError("cannot store optimizer state '")
                 << name << "' in 8 bits: its new value is not a kernel result";
        assigns.push_back(assign);
      } else {
        return user->emitError("cannot store optimizer state '")
               << name << "' in 8 bits: unexpected use";
      }
    }

    q.codes = addTrainingState(symbols, q.state, (name + ".codes").str(),
                               codesType, kRoleOptimizerState);
    q.absmax = addTrainingState(symbols, q.codes, (name + ".absmax").str(),
                                absmaxType, kRoleOptimizerState);
    for (auto [param, what] :
         {std::pair(q.codes, "codes"), std::pair(q.absmax, "absmax")}) {
      param->setAttr(kQuantizedAttr, StringAttr::get(ctx, what));
      if (Attribute owner = q.state->getAttr(kStateOfAttr))
        param->setAttr(kStateOfAttr, owner);
    }
    auto scheme = QuantSchemeAttr::get(ctx, q.scheme);
    auto blockSize = IntegerAttr::get(IntegerType::get(ctx, 64), stateBlockSize);

    // Reads: the kernel takes the codes and absmax and dequantizes them.
    for (LoadParameterOp load : loads) {
      OpBuilder builder(load);
      Location loc = load.getLoc();
      Value codes = LoadParameterOp::create(
          builder, loc, codesType,
          FlatSymbolRefAttr::get(q.codes.getSymNameAttr()));
      Value absmax = LoadParameterOp::create(
          builder, loc, absmaxType,
          FlatSymbolRefAttr::get(q.absmax.getSymNameAttr()));
      for (OpOperand &use : llvm::make_early_inc_range(load->getUses())) {
        auto kernel = cast<KernelOp>(use.getOwner());
        unsigned index = use.getOperandNumber();
        Block &body = kernel.getBodyBlock();
        BlockArgument old = body.getArgument(index);
        BlockArgument codesArg = body.addArgument(codesType, loc);
        BlockArgument absmaxArg = body.addArgument(absmaxType, loc);
        kernel->insertOperands(kernel->getNumOperands(), {codes, absmax});
        OpBuilder inner = OpBuilder::atBlockBegin(&body);
        Value value = DequantizeOp::create(inner, loc, type, codesArg,
                                           absmaxArg, scheme, blockSize);
        old.replaceAllUsesWith(value);
        body.eraseArgument(index);
        kernel->eraseOperand(index);
      }
      load.erase();
    }

    // Writes: the kernel quantizes the new value and returns codes and
    // absmax in its place.
    for (AssignOp assign : assigns) {
      auto result = cast<OpResult>(assign.getValue());
      auto kernel = cast<KernelOp>(result.getOwner());
      unsigned index = result.getResultNumber();
      auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
      OpBuilder inner(yield);
      Location loc = assign.getLoc();
      auto quantize =
          QuantizeOp::create(inner, loc, TypeRange{codesType, absmaxType},
                             yield.getOperand(index), scheme, blockSize);
      SmallVector<Value> values(yield.getOperands());
      values.erase(values.begin() + index);
      values.append({quantize.getCodes(), quantize.getAbsmax()});
      yield->setOperands(values);

      OpBuilder builder(kernel);
      auto rebuilt = KernelOp::create(builder, kernel.getLoc(),
                                      ValueRange(values).getTypes(),
                                      kernel.getOperands());
      rebuilt->setAttrs(kernel->getAttrs());
      rebuilt.getBody().takeBody(kernel.getBody());
      unsigned results = kernel.getNumResults();
      for (unsigned i = 0, j = 0; i < results; ++i)
        if (i != index)
          kernel.getResult(i).replaceAllUsesWith(rebuilt.getResult(j++));
      builder.setInsertionPoint(assign);
      AssignOp::create(builder, loc,
                       FlatSymbolRefAttr::get(q.codes.getSymNameAttr()),
                       rebuilt.getResult(results - 1));
      AssignOp::create(builder, loc,
                       FlatSymbolRefAttr::get(q.absmax.getSymNameAttr()),
                       rebuilt.getResult(results));
      assign.erase();
      kernel.erase();
    }
    symbols.erase(q.state);
    return success();
  }
};

} // namespace
