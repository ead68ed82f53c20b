//===- NodeContext.cpp - one ONNX node's inputs, attributes, builders -----===//
//
// See NodeContext.h: how a converter reads the node (inputs, constant
// inputs, attributes), builds and folds memfit ops, reports errors located
// at the node, and binds the node's outputs.
//
//===----------------------------------------------------------------------===//

#include "NodeContext.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

std::string NodeContext::name() const {
  if (StringRef name = onnxNodeName(loc); !name.empty())
    return name.str();
  return node.name();
}

InFlightDiagnostic NodeContext::error() {
  return emitError(loc) << "ONNX node '" << name() << "' (" << node.op_type()
                        << "): ";
}

LogicalResult onnx_import::captureDiagnostic(MLIRContext *ctx,
                                             std::string &message,
                                             function_ref<LogicalResult()> fn) {
  ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &diag) {
    if (message.empty())
      message = diag.str();
    return success();
  });
  return fn();
}

LogicalResult NodeContext::rule(function_ref<LogicalResult(OptLoc)> fn) {
  std::string why;
  if (succeeded(captureDiagnostic(b.getContext(), why,
                                  [&] { return fn(loc); })))
    return success();
  return error() << why;
}

int64_t NodeContext::numInputs() const {
  int64_t n = node.input_size();
  while (n > 0 && node.input(n - 1).empty())
    --n;
  return n;
}

bool NodeContext::hasInput(int64_t i) const {
  return i < node.input_size() && !node.input(i).empty();
}

Value NodeContext::input(int64_t i) const {
  return hasInput(i) ? values.lookup(node.input(i)) : Value();
}

RankedTensorType NodeContext::inputType(int64_t i) const {
  return cast<RankedTensorType>(input(i).getType());
}

int64_t NodeContext::numOutputs() const { return node.output_size(); }

bool NodeContext::hasOutput(int64_t i) const {
  return i < node.output_size() && !node.output(i).empty();
}

DenseElementsAttr NodeContext::constantInput(int64_t i) const {
  Value v = input(i);
  if (!v)
    return {};
  if (auto c = v.getDefiningOp<ConstantOp>())
    return dyn_cast<DenseElementsAttr>(c.getValue());
  return {};
}

void NodeContext::noteGraphInput(InFlightDiagnostic &diag, int64_t i) const {
  if (isa_and_present<BlockArgument>(input(i)))
    diag << "; it is a graph input: give its value with --input-value="
         << node.input(i) << "=V,V,...";
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(int64_t i,
                                                          StringRef what) {
  DenseElementsAttr c = constantInput(i);
  // Read as signed integers only when they are (a float or a boolean would
  // be read through the wrong type).
  Type elt = input(i) ? eltOf(input(i)) : Type();
  if (elt && (!isa<IntegerType>(elt) || elt.isInteger(1)))
    return error() << what << " (input " << i << ", '" << node.input(i)
                   << "') must be an integer tensor, got "
                   << input(i).getType(),
           failure();
  if (!c || !isa<IntegerType>(c.getElementType())) {
    InFlightDiagnostic diag = error();
    diag << what << " (input " << i << ", '" << node.input(i)
         << "') must be an integer tensor known at compile time, but it is "
            "computed at run time";
    noteGraphInput(diag, i);
    return failure();
  }
  SmallVector<int64_t> out;
  for (const APInt &v : c.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

FailureOr<Attribute> NodeContext::constantScalar(int64_t i, StringRef what) {
  DenseElementsAttr c = constantInput(i);
  if (!c || c.getNumElements() != 1) {
    InFlightDiagnostic diag = error();
    diag << what << " (input " << i << ", '" << node.input(i)
         << "') must be a single value known at compile time";
    noteGraphInput(diag, i);
    return failure();
  }
  return *c.getValues<Attribute>().begin();
}

const onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : dflt;
}

float NodeContext::floatAttr(StringRef name, float dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::stringAttr(StringRef name, StringRef dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

Value NodeContext::constant(ElementsAttr value) {
  return ConstantOp::create(b, loc, value);
}

Value NodeContext::scalar(Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr;
  if (elt.isInteger(1))
    attr = b.getBoolAttr(value != 0);
  else if (isa<FloatType>(elt))
    attr = FloatAttr::get(elt, value);
  else
    attr = IntegerAttr::get(elt, static_cast<int64_t>(value));
  return constant(DenseElementsAttr::get(type, attr));
}

SmallVector<Value> NodeContext::foldOp(Operation *op) {
  // Folders size their results from the result types: one whose elements
  // cannot be counted is left unfolded, for importNode to report. So is an
  // op that its verifier refuses (an operand of an element type the op
  // does not take): a folder reads constants through the types the op's
  // definition promises, and importNode reports the verifier's message.
  if (llvm::any_of(op->getResultTypes(), [](Type t) {
        auto type = dyn_cast<RankedTensorType>(t);
        return type && !checkedNumElements(type.getShape());
      }))
    return SmallVector<Value>(op->getResults());
  std::string ignored;
  if (failed(captureDiagnostic(b.getContext(), ignored, [&] {
        return verify(op, /*verifyRecursively=*/false);
      })))
    return SmallVector<Value>(op->getResults());
  SmallVector<Value> results;
  if (succeeded(b.tryFold(op, results)) && !results.empty()) {
    op->erase();
    return results;
  }
  return SmallVector<Value>(op->getResults());
}

std::string NodeContext::describeInputs() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  for (int64_t i = 0; i < node.input_size(); ++i) {
    if (i)
      os << ", ";
    if (node.input(i).empty()) {
      os << "<omitted>";
      continue;
    }
    os << "'" << node.input(i) << "' ";
    if (Value v = input(i))
      os << v.getType();
  }
  return s;
}

LogicalResult NodeContext::setResults(ValueRange results) {
  if (static_cast<int64_t>(results.size()) < numOutputs()) {
    for (int64_t i = results.size(); i < numOutputs(); ++i)
      if (hasOutput(i))
        return error() << "output " << i << " ('" << node.output(i)
                       << "') is not supported by memfit";
  }
  for (int64_t i = 0; i < numOutputs(); ++i)
    if (hasOutput(i))
      values[node.output(i)] = results[i];
  return success();
}
