//===- GraphInputs.cpp - the types and values of ONNX graph inputs --------===//
//
// A graph input becomes an argument of the imported function, its dynamic
// dimensions specialized from --input-shape (by input, or by the symbolic
// dimension's name, bound once for every input that shares it); or, with
// --input-value, a constant of its declared type.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

FailureOr<DenseElementsAttr>
GraphImporter::givenValue(const onnx::ValueInfoProto &info) {
  const std::vector<std::string> &texts =
      options.inputValues.lookup(info.name());
  auto fail = [&]() {
    return emitError(fileLoc()) << "--input-value=" << info.name() << ": ";
  };
  if (!info.type().has_tensor_type())
    return fail() << "the input is not a tensor", failure();
  const auto &tensor = info.type().tensor_type();
  Type elt = convertElementType(tensor.elem_type(), ctx);
  if (!elt)
    return fail() << "the input has unsupported "
                  << onnxTypeName(tensor.elem_type()),
           failure();
  // The declared shape; a rank-1 input of unknown length takes the count.
  SmallVector<int64_t> shape;
  int64_t count = static_cast<int64_t>(texts.size()), elements = 1;
  for (const auto &d : tensor.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      shape.push_back(d.dim_value());
    else if (tensor.shape().dim_size() == 1)
      shape.push_back(count);
    else
      return fail() << "the input's shape is not static; only a vector may "
                       "take its length from the values",
             failure();
    if (shape.back() > 0 && elements > count / shape.back() + 1)
      elements = count + 1; // more than given, without overflowing
    else
      elements *= shape.back();
  }
  if (elements != count)
    return fail() << "the input of shape " << shapeToString(shape)
                  << " does not hold the " << count << " values given",
           failure();
  auto type = RankedTensorType::get(shape, elt);
  SmallVector<Attribute> attrs;
  for (const std::string &text : texts) {
    StringRef t(text);
    if (auto it = dyn_cast<IntegerType>(elt)) {
      int64_t v;
      if (it.getWidth() == 1 && (t == "true" || t == "false"))
        v = t == "true";
      else if (t.getAsInteger(10, v))
        return fail() << "'" << t << "' is not an integer", failure();
      unsigned width = it.getWidth();
      bool fits = width >= 64       ? (!it.isUnsigned() || v >= 0)
                  : width == 1      ? (v == 0 || v == 1)
                  : it.isUnsigned() ? v >= 0 && v < (int64_t(1) << width)
                                    : v >= -(int64_t(1) << (width - 1)) &&
                                          v < (int64_t(1) << (width - 1));
      if (!fits)
        return fail() << t << " does not fit " << elt, failure();
      attrs.push_back(IntegerAttr::get(
          elt, APInt(width, v, !it.isUnsigned(), /*implicitTrunc=*/true)));
      continue;
    }
    double v;
    if (!isa<FloatType>(elt) || t.getAsDouble(v))
      return fail() << "'" << t << "' is not a " << elt << " value", failure();
    attrs.push_back(FloatAttr::get(elt, v));
  }
  return DenseElementsAttr::get(type, attrs);
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  const onnx::TypeProto &tp = info.type();
  if (!tp.has_tensor_type())
    return emitError(fileLoc()) << "graph input '" << info.name()
                                << "' is not a tensor", failure();
  const auto &tt = tp.tensor_type();
  Type elt = convertElementType(tt.elem_type(), ctx);
  if (!elt)
    return emitError(fileLoc())
               << "graph input '" << info.name() << "' has unsupported "
               << onnxTypeName(tt.elem_type()),
           failure();
  auto given = options.inputShapes.find(info.name());
  if (!tt.has_shape()) {
    if (given == options.inputShapes.end())
      return emitError(fileLoc())
                 << "graph input '" << info.name()
                 << "' has no shape in the model; give one with "
                    "--input-shape="
                 << info.name() << "=DxD...",
             failure();
    if (!checkedNumElements(given->second, byteWidth(elt)))
      return emitError(fileLoc())
                 << "--input-shape gives '" << info.name() << "' shape "
                 << shapeToString(given->second)
                 << ", more elements than 64-bit sizes can count",
             failure();
    return RankedTensorType::get(given->second, elt);
  }
  const auto &dims = tt.shape().dim();
  if (given != options.inputShapes.end() &&
      given->second.size() != static_cast<size_t>(dims.size()))
    return emitError(fileLoc())
               << "--input-shape gives '" << info.name() << "' rank "
               << given->second.size() << " but the model declares rank "
               << dims.size(),
           failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(dims)) {
    std::optional<int64_t> fromUser;
    if (given != options.inputShapes.end())
      fromUser = given->second[i];
    if (d.has_dim_value() && d.dim_value() >= 0) {
      if (fromUser && *fromUser != d.dim_value())
        return emitError(fileLoc())
                   << "--input-shape gives dimension " << i << " of '"
                   << info.name() << "' as " << *fromUser
                   << " but the model fixes it to " << d.dim_value(),
               failure();
      shape.push_back(d.dim_value());
      continue;
    }
    std::string param = d.has_dim_param() ? d.dim_param() : "";
    if (!fromUser && !param.empty()) {
      auto bound = dimBindings.find(param);
      if (bound != dimBindings.end())
        fromUser = bound->second;
      else if (auto v = options.dimValues.find(param);
               v != options.dimValues.end())
        fromUser = v->second;
    }
    if (!fromUser)
      return emitError(fileLoc())
                 << "dimension " << i << " of graph input '" << info.name()
                 << "' is dynamic"
                 << (param.empty() ? "" : " ('" + param + "')")
                 << " and no size was given; pass --input-shape="
                 << info.name() << "=" << [&] {
                      std::string s;
                      for (int k = 0; k < dims.size(); ++k)
                        s += (k ? "x" : "") +
                             (dims[k].has_dim_value()
                                  ? std::to_string(dims[k].dim_value())
                                  : std::string("N"));
                      return s;
                    }(),
             failure();
    if (!param.empty()) {
      auto [it, inserted] = dimBindings.try_emplace(param, *fromUser);
      if (!inserted && it->second != *fromUser)
        return emitError(fileLoc())
                   << "dimension '" << param << "' is " << it->second
                   << " for an earlier input but " << *fromUser << " for '"
                   << info.name() << "'",
               failure();
    }
    shape.push_back(*fromUser);
  }
  if (!checkedNumElements(shape, byteWidth(elt)))
    return emitError(fileLoc())
               << "graph input '" << info.name() << "' of shape "
               << shapeToString(shape)
               << " has more elements than 64-bit sizes can count",
           failure();
  return RankedTensorType::get(shape, elt);
}
