//===- Quantize.cpp - quantized weights and 8-bit optimizer states --------===//
//
// memfit-quantize weights=nf4|fp4|int8: frozen contraction weights are
// quantized at compile time and dequantized just before each use.
// optimizer-states=8bit: each large enough optimizer state becomes codes
// and per-block absmax states, and the update kernel that reads and writes
// it dequantizes at its start and quantizes at its end.
// saved-activations=int8: recorded on the module for memfit-remat, which
// may then save a forward value compressed. See the pass description in
// Passes.td.
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

#include <cmath>
#include <cstring>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITQUANTIZEPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

namespace {

/// The float values of an f32 parameter, or nothing for storage this pass
/// does not read. A splat (zeros when planning without the weights) gives
/// only its first `splatCount` values: its codes and scales are splats too.
std::optional<SmallVector<float>> floatValues(ParameterOp param,
                                              int64_t splatCount, bool &splat) {
  splat = false;
  if (!param.getType().getElementType().isF32())
    return std::nullopt;
  int64_t n = param.getType().getNumElements();
  ArrayRef<char> bytes = storedBytes(param.getValue());
  if (bytes.size() == size_t(n) * sizeof(float)) {
    SmallVector<float> out(n);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  auto dense = dyn_cast<DenseElementsAttr>(param.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  splat = true;
  return SmallVector<float>(std::min(n, splatCount),
                            dense.getSplatValue<float>());
}

template <typename T> ArrayRef<char> asBytes(ArrayRef<T> values) {
  return ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                        values.size() * sizeof(T));
}

/// Whether every use of `value` is a contraction's operand, directly or
/// through transposes and casts (a working copy, the tied head).
bool feedsContractionsOnly(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<MatMulOp, GemmOp>(user))
      continue;
    if (isa<TransposeOp, CastOp>(user) &&
        feedsContractionsOnly(user->getResult(0)))
      continue;
    return false;
  }
  return true;
}

/// Block-wise absmax and codes of `values` (codes packed two per byte,
/// the first in the high nibble, for 4-bit schemes).
void quantizeValues(ArrayRef<float> values, QuantScheme scheme,
                    int64_t blockSize, SmallVector<float> &absmax,
                    SmallVector<uint8_t> &codes) {
  int64_t n = values.size();
  absmax.assign(quantBlockCount(n, blockSize), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    absmax[i / blockSize] =
        std::max(absmax[i / blockSize], std::fabs(values[i]));
  codes.assign(quantCodeBytes(scheme, n), 0);
  bool nibbles = quantCodeBits(scheme) == 4;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t code = quantEncode(scheme, values[i], absmax[i / blockSize]);
    if (!nibbles)
      codes[i] = code;
    else
      codes[i / 2] |= (i % 2 ? code : code << 4);
  }
}

/// A state to quantize and what replaces it.
struct QuantizedState {
  ParameterOp state, codes, absmax;
  QuantScheme scheme;
};

struct MemfitQuantizePass
    : public mlir::memfit::impl::MemfitQuantizePassBase<MemfitQuantizePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (stateBlockSize < 1)
      return module.emitError("state-block-size must be positive, got ")
             << static_cast<int64_t>(stateBlockSize);
    if (min8bitSize < 0)
      return module.emitError("min-8bit-size must not be negative");
    GlobList keep;
    std::string error;
    if (!keep.parse(keepFp32States, "keep-fp32-states", error))
      return module.emitError(error);
    std::optional<QuantScheme> weightScheme;
    switch (weights) {
    case ::memfit::WeightStorage::NF4:
      weightScheme = QuantScheme::NF4;
      break;
    case ::memfit::WeightStorage::FP4:
      weightScheme = QuantScheme::FP4;
      break;
    case ::memfit::WeightStorage::Int8:
      weightScheme = QuantScheme::Linear;
      break;
    case ::memfit::WeightStorage::None:
      break;
    }
    if (weightScheme && (weightBlockSize < 2 || weightBlockSize % 2))
      return module.emitError("weight-block-size must be even and at least 2, "
                              "got ")
             << static_cast<int64_t>(weightBlockSize);
    if (doubleQuant && weightScheme != QuantScheme::NF4 &&
        weightScheme != QuantScheme::FP4)
      return module.emitError("double-quant needs weights=nf4 or weights=fp4");
    if (activationBlockSize < 1)
      return module.emitError("activation-block-size must be positive, got ")
             << static_cast<int64_t>(activationBlockSize);
    if (savedActivations == ::memfit::ActivationStorage::Int8) {
      MLIRContext *ctx = module.getContext();
      NamedAttribute entries[] = {
          NamedAttribute(
              StringAttr::get(ctx, "block_size"),
              IntegerAttr::get(IntegerType::get(ctx, 64), activationBlockSize)),
          NamedAttribute(StringAttr::get(ctx, "scheme"),
                         StringAttr::get(ctx, "int8"))};
      module->setAttr(kSavedActivationsAttr, DictionaryAttr::get(ctx, entries));
    }
    SymbolTable symbols(module);
    if (weightScheme && failed(quantizeWeights(module, symbols, *weightScheme)))
      return failure();
    if (optimizerStates == ::memfit::StateStorage::Fp32)
      return success();

    SmallVector<QuantizedState> chosen;
    bool anyState = false;
    for (auto param :
         llvm::make_early_inc_range(module.getOps<ParameterOp>())) {
      if (parameterRole(param) != kRoleOptimizerState)
        continue;
      anyState = true;
      auto owner = param->getAttrOfType<FlatSymbolRefAttr>(kStateOfAttr);
      RankedTensorType type = param.getType();
      // Under ZeRO a state holds a rank's rows of its parameter: the size
      // that decides is the whole state's, so that every world size stores
      // the same states in 8 bits.
      int64_t elements = type.getNumElements();
      auto of = owner ? SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
                            param, owner)
                      : ParameterOp();
      if (of && type.getRank() > 0 && type.getDimSize(0) > 0 &&
          of.getType().getRank() > 0) {
        auto whole = of->getAttrOfType<IntegerAttr>(kWholeRowsAttr);
        int64_t rows = whole ? whole.getInt() : of.getType().getDimSize(0);
        elements = elements / type.getDimSize(0) * rows;
      }
      if (!type.getElementType().isF32() || elements < min8bitSize ||
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

  /// Quantizes every frozen weight that only contractions read and
  /// dequantizes it before each of its uses.
  LogicalResult quantizeWeights(ModuleOp module, SymbolTable &symbols,
                                QuantScheme scheme) {
    MLIRContext *ctx = &getContext();
    bool training =
        llvm::any_of(module.getOps<ParameterOp>(),
                     [](ParameterOp p) { return !parameterRole(p).empty(); });
    for (auto param :
         llvm::make_early_inc_range(module.getOps<ParameterOp>())) {
      StringRef role = parameterRole(param);
      if ((training && role != kRoleFrozen) ||
          param.getType().getNumElements() < minWeightSize)
        continue;
      SmallVector<LoadParameterOp> loads;
      bool contractionsOnly = true;
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(param.getSymNameAttr(), module);
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto load = dyn_cast<LoadParameterOp>(use.getUser());
        if (!load || !feedsContractionsOnly(load.getResult()))
          contractionsOnly = false;
        else
          loads.push_back(load);
      }
      if (!contractionsOnly || loads.empty())
        continue;
      // Two blocks of a splat: whole bytes of 4-bit codes.
      bool splat = false;
      std::optional<SmallVector<float>> values =
          floatValues(param, 2 * weightBlockSize, splat);
      if (!values)
        continue;
      // Codes cannot stand for a NaN or an infinity: such a weight keeps
      // its values (it reached quantEncode and converted a NaN to an
      // integer: found by memfit-compile-fuzz under UBSan).
      if (llvm::any_of(*values, [](float v) { return !std::isfinite(v); })) {
        param.emitRemark("weight '")
            << param.getSymName()
            << "' holds a NaN or an infinity: it is not quantized";
        continue;
      }

      // The codes and absmax, computed now.
      SmallVector<float> absmax;
      SmallVector<uint8_t> codes;
      quantizeValues(*values, scheme, weightBlockSize, absmax, codes);
      std::string name = param.getSymName().str();
      Type f32 = Float32Type::get(ctx);
      int64_t n = param.getType().getNumElements();
      int64_t blocks = quantBlockCount(n, weightBlockSize);
      auto codesType = RankedTensorType::get({quantCodeBytes(scheme, n)},
                                             quantCodeType(ctx, scheme));
      auto absmaxType = RankedTensorType::get({blocks}, f32);
      OpBuilder builder(param);
      auto add = [&](StringRef suffix, RankedTensorType type,
                     ArrayRef<char> bytes, StringRef what) {
        std::string symbol = name + suffix.str();
        // A splat's first element stands for all of them.
        int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
        ElementsAttr value =
            splat ? cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
                        type, bytes.take_front(elementBytes)))
                  : elementsFromBytes(type, bytes, symbol);
        auto created = ParameterOp::create(
            builder, param.getLoc(), builder.getStringAttr(symbol), value);
        if (!role.empty())
          created->setAttr(kRoleAttr, builder.getStringAttr(role));
        created->setAttr(kQuantizedAttr, builder.getStringAttr(what));
        symbols.insert(created);
        return created;
      };
      ParameterOp codesParam =
          add(".codes", codesType, asBytes(ArrayRef<uint8_t>(codes)),
              "weight_codes");
      ParameterOp absmaxParam, nestedCodes, nestedAbsmax, offsetParam;
      auto nestedBlock = IntegerAttr::get(IntegerType::get(ctx, 64), 256);
      if (doubleQuant) {
        // QLoRA's double quantization: the absmax minus their mean, in
        // 8-bit codes of the signed dynamic map, blocks of 256.
        double sum = 0;
        for (float a : absmax)
          sum += a;
        float offset = static_cast<float>(sum / absmax.size());
        SmallVector<float> shifted;
        for (float a : absmax)
          shifted.push_back(a - offset);
        SmallVector<float> scales;
        SmallVector<uint8_t> shiftedCodes;
        quantizeValues(shifted, QuantScheme::Dynamic, 256, scales,
                       shiftedCodes);
        nestedCodes =
            add(".absmax.codes",
                RankedTensorType::get({blocks},
                                      quantCodeType(ctx, QuantScheme::Dynamic)),
                asBytes(ArrayRef<uint8_t>(shiftedCodes)), "weight_absmax");
        nestedAbsmax =
            add(".absmax.absmax",
                RankedTensorType::get({quantBlockCount(blocks, 256)}, f32),
                asBytes(ArrayRef<float>(scales)), "weight_absmax");
        offsetParam = add(".absmax.offset", RankedTensorType::get({1}, f32),
                          asBytes(ArrayRef<float>(offset)), "weight_absmax");
      } else {
        absmaxParam = add(".absmax", absmaxType,
                          asBytes(ArrayRef<float>(absmax)), "weight_absmax");
      }

      auto scheme8 = QuantSchemeAttr::get(ctx, scheme);
      auto blockSize =
          IntegerAttr::get(IntegerType::get(ctx, 64), weightBlockSize);
      auto load = [&](OpBuilder &b, Location loc, ParameterOp p) -> Value {
        return LoadParameterOp::create(
            b, loc, p.getType(), FlatSymbolRefAttr::get(p.getSymNameAttr()));
      };
      for (LoadParameterOp old : loads) {
        for (OpOperand &use : llvm::make_early_inc_range(old->getUses())) {
          OpBuilder b(use.getOwner());
          // Named so that plans and reports say what the buffer holds.
          Location loc = NameLoc::get(
              StringAttr::get(ctx, name + " (dequantized)"), old.getLoc());
          Location at = old.getLoc();
          // Loads in a fixed order: codes, then scales.
          Value codes = load(b, at, codesParam);
          Value scales;
          if (doubleQuant) {
            Value nested = load(b, at, nestedCodes);
            Value nestedScales = load(b, at, nestedAbsmax);
            Value back = DequantizeOp::create(
                b, loc, absmaxType, nested, nestedScales,
                QuantSchemeAttr::get(ctx, QuantScheme::Dynamic), nestedBlock);
            Value offset = load(b, at, offsetParam);
            scales = AddOp::create(b, loc, absmaxType, back, offset);
          } else {
            scales = load(b, at, absmaxParam);
          }
          Value weight = DequantizeOp::create(b, loc, param.getType(), codes,
                                              scales, scheme8, blockSize);
          use.set(weight);
        }
        old.erase();
      }
      symbols.erase(param);
    }
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
    auto codesType = RankedTensorType::get({quantCodeBytes(q.scheme, n)},
                                           quantCodeType(ctx, q.scheme));
    auto absmaxType = RankedTensorType::get({blocks}, Float32Type::get(ctx));
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
      // A state kept in host memory (offload-states) stays there in 8 bits.
      if (keptInHostMemory(q.state))
        keepInHostMemory(param);
    }
    auto scheme = QuantSchemeAttr::get(ctx, q.scheme);
    auto blockSize =
        IntegerAttr::get(IntegerType::get(ctx, 64), stateBlockSize);

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
      auto rebuilt =
          KernelOp::create(builder, kernel.getLoc(),
                           ValueRange(values).getTypes(), kernel.getOperands());
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
