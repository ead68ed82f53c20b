//===- OnnxConstantOps.cpp - constant and generator converters ------------===//
//
// The ops whose results are known at compile time: Constant, ConstantOfShape,
// Shape and Size (the shapes are static), and Range, a memfit.range of
// start, limit and delta known at compile time. Shape computations in
// exported graphs fold to constants through them.
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Shape: the input's dimensions from 'start' to 'end', a constant.
LogicalResult convertShape(NodeContext &n) {
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size();
  int64_t start = n.intAttr("start", 0), end = n.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SmallVector<int64_t> dims(shape.begin() + start, shape.begin() + end);
  auto type = RankedTensorType::get({end - start}, n.b.getI64Type());
  return n.setResults(
      n.constant(DenseElementsAttr::get(type, ArrayRef<int64_t>(dims))));
}

/// Size: the input's element count, a constant.
LogicalResult convertSize(NodeContext &n) {
  auto type = RankedTensorType::get({}, n.b.getI64Type());
  return n.setResults(n.constant(DenseElementsAttr::get(
      type, ArrayRef<int64_t>{n.inputType(0).getNumElements()})));
}

/// Constant: the tensor or numbers of its one value attribute.
LogicalResult convertConstant(NodeContext &n) {
  Builder &b = n.b;
  for (const auto &a : n.node.attribute()) {
    StringRef name = a.name();
    if (name == "value") {
      FailureOr<ElementsAttr> value = n.loadTensor(a.t());
      return failed(value) ? failure() : n.setResults(n.constant(*value));
    }
    if (name == "value_float")
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({}, b.getF32Type()), a.f())));
    if (name == "value_floats") {
      SmallVector<float> v(a.floats().begin(), a.floats().end());
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, b.getF32Type()),
          ArrayRef<float>(v))));
    }
    if (name == "value_int")
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({}, b.getI64Type()), a.i())));
    if (name == "value_ints") {
      SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
      return n.setResults(n.constant(DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, b.getI64Type()),
          ArrayRef<int64_t>(v))));
    }
  }
  return n.error() << "has no supported value attribute (value, value_float, "
                      "value_floats, value_int, value_ints)";
}

/// ConstantOfShape: a splat of 'value' (a float 0 without it) of a shape
/// known at compile time.
LogicalResult convertConstantOfShape(NodeContext &n) {
  FailureOr<SmallVector<int64_t>> shape = n.constantInts(0, "shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return n.error() << "shape " << shapeToString(*shape)
                     << " has a negative dimension";
  Attribute fill = n.b.getZeroAttr(n.b.getF32Type());
  Type elt = n.b.getF32Type();
  if (const onnx::AttributeProto *v = n.attr("value")) {
    FailureOr<ElementsAttr> t = n.loadTensor(v->t());
    if (failed(t))
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(*t);
    if (!dense || dense.getNumElements() != 1)
      return n.error() << "value must hold exactly one element";
    fill = *dense.getValues<Attribute>().begin();
    elt = dense.getElementType();
  }
  auto type = RankedTensorType::get(*shape, elt);
  return n.setResults(n.constant(DenseElementsAttr::get(type, fill)));
}

/// Range: start, limit and delta known at compile time, a memfit.range of
/// the element count they give.
LogicalResult convertRange(NodeContext &n) {
  FailureOr<Attribute> start = n.constantScalar(0, "start");
  if (failed(start))
    return failure();
  FailureOr<Attribute> limit = n.constantScalar(1, "limit");
  if (failed(limit))
    return failure();
  FailureOr<Attribute> delta = n.constantScalar(2, "delta");
  if (failed(delta))
    return failure();
  Type elt = n.inputType(0).getElementType();
  // From opset 27 on, 16-bit ranges are computed in stash_type; memfit
  // computes them in wider floats and rounds once, as float (1) does.
  if (int64_t stash = n.intAttr("stash_type", 1);
      stash != 1 && isa<Float16Type, BFloat16Type>(elt))
    return n.error() << "stash_type " << stash
                     << " is not supported (only 1, float)";
  // ONNX gives the three one type; the op's folder relies on it.
  for (Attribute a : {*start, *limit, *delta})
    if (auto typed = dyn_cast<TypedAttr>(a); !typed || typed.getType() != elt ||
                                             !elt.isIntOrFloat() ||
                                             elt.isInteger(1))
      return n.error() << "start, limit and delta must be numbers of one type"
                       << " (inputs: " << n.describeInputs() << ")";
  auto asDouble = [](Attribute a) {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    return static_cast<double>(cast<IntegerAttr>(a).getValue().getSExtValue());
  };
  double s = asDouble(*start), l = asDouble(*limit), d = asDouble(*delta);
  if (d == 0)
    return n.error() << "delta is zero";
  double steps = std::ceil((l - s) / d);
  // NaN or infinite bounds, or more elements than a size can count.
  if (!std::isfinite(steps) || steps >= 0x1p62)
    return n.error() << "start " << s << ", limit " << l << " and delta " << d
                     << " do not give a countable number of elements";
  int64_t count = steps > 0 ? static_cast<int64_t>(steps) : 0;
  auto type = RankedTensorType::get({count}, elt);
  return n.setResults(n.buildTyped<RangeOp>(
      type, {}, {n.named("start", *start), n.named("delta", *delta)}));
}

} // namespace

void onnx_import::populateConstantConverters(OpTable &table) {
  table.onOp("Constant", 13, 0, 0, convertConstant);
  table.onOp("ConstantOfShape", 13, 1, 1, convertConstantOfShape);
  table.onOp("Range", 13, 3, 3, convertRange);
  table.onOp("Shape", 13, 1, 1, convertShape);
  table.onOp("Size", 13, 1, 1, convertSize);
}
