//===- Training.cpp - training attributes shared by passes and the planner -===//

#include "memfit/Dialect/Training.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::memfit;

FailureOr<func::FuncOp> mlir::memfit::findEntryFunction(ModuleOp module,
                                                        StringRef name) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  if (!name.empty()) {
    for (func::FuncOp func : funcs)
      if (func.getSymName() == name)
        return func;
    return module.emitError("no function named '") << name << "'";
  }
  if (funcs.size() == 1)
    return funcs.front();
  for (func::FuncOp func : funcs)
    if (func.getSymName() == "main")
      return func;
  return module.emitError("the module has ")
         << funcs.size() << " functions and none is named main; choose one";
}

bool mlir::memfit::isTrainableCandidate(ParameterOp param) {
  RankedTensorType type = param.getType();
  return type.getRank() >= 1 && isa<FloatType>(type.getElementType());
}

StringRef mlir::memfit::parameterRole(ParameterOp param) {
  if (auto role = param->getAttrOfType<StringAttr>(kRoleAttr))
    return role.getValue();
  return {};
}

bool mlir::memfit::keptInHostMemory(ParameterOp param) {
  auto space = param->getAttrOfType<StringAttr>(kMemorySpaceAttr);
  return space && space.getValue() == "host";
}

void mlir::memfit::keepInHostMemory(ParameterOp param) {
  param->setAttr(kMemorySpaceAttr,
                 StringAttr::get(param.getContext(), "host"));
}

DictionaryAttr mlir::memfit::namedValueAttrs(MLIRContext *context,
                                             StringRef name) {
  return DictionaryAttr::get(
      context, {NamedAttribute(StringAttr::get(context, "onnx.name"),
                               StringAttr::get(context, name))});
}

BlockArgument mlir::memfit::appendNamedArgument(func::FuncOp func, Type type,
                                                StringRef name) {
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type,
                            namedValueAttrs(func.getContext(), name),
                            func.getLoc());
  return func.getArgument(index);
}

void mlir::memfit::setResults(func::FuncOp func, ValueRange values,
                              ArrayRef<DictionaryAttr> attrs) {
  func.getBody().front().getTerminator()->setOperands(values);
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 values.getTypes()));
  func.setAllResultAttrs(attrs);
}

ParameterOp mlir::memfit::addTrainingState(SymbolTable &symbols,
                                           Operation *after, StringRef name,
                                           RankedTensorType type,
                                           StringRef role, double init) {
  OpBuilder builder(after->getContext());
  builder.setInsertionPointAfter(after);
  std::string unique = name.str();
  for (int n = 1; symbols.lookup(unique); ++n)
    unique = name.str() + "_" + std::to_string(n);
  Type element = type.getElementType();
  Attribute fill = isa<FloatType>(element)
                       ? Attribute(builder.getFloatAttr(element, init))
                       : Attribute(builder.getIntegerAttr(
                             element, static_cast<int64_t>(init)));
  auto value = DenseElementsAttr::get(type, fill);
  auto state = ParameterOp::create(builder, after->getLoc(),
                                   builder.getStringAttr(unique), value);
  state->setAttr(kRoleAttr, builder.getStringAttr(role));
  symbols.insert(state);
  return state;
}

KernelOp mlir::memfit::copyKernel(OpBuilder &builder, Location loc,
                                  Value value) {
  auto kernel = KernelOp::create(builder, loc, value.getType(), value);
  OpBuilder::InsertionGuard guard(builder);
  Block *body = builder.createBlock(&kernel.getBody());
  body->addArgument(value.getType(), loc);
  YieldOp::create(builder, loc, body->getArguments());
  return kernel;
}

SmallVector<NamedAttribute> mlir::memfit::memfitAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (attr.getName().getValue().starts_with("memfit."))
      attrs.push_back(attr);
  return attrs;
}

void mlir::memfit::copyMemfitAttrs(Operation *from, Operation *to) {
  for (NamedAttribute attr : memfitAttrs(from))
    to->setAttr(attr.getName(), attr.getValue());
}

bool mlir::memfit::returnsGradients(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, kGradientOfAttr))
      return true;
  return false;
}
