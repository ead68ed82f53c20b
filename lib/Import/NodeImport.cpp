//===- NodeImport.cpp - one ONNX node through the op table ----------------===//
//
// A node's location (its name and the exporter's module scope), its inputs
// resolved (earlier results, graph inputs, initializers created at first
// use), its input count and attribute types checked against the converter
// it gets from the op table, the conversion, and every op it became checked
// (sizes that 64 bits count, the op's verifier) so that a problem is
// reported on the node.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeContext.h"
#include "OpTable.h"

#include "mlir/IR/Verifier.h"

#include <google/protobuf/unknown_field_set.h>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

/// NodeProto.metadata_props in onnx.proto (IR version 10).
constexpr int kNodeMetadataPropsField = 9;

Location GraphImporter::nodeLoc(const onnx::NodeProto &node, int64_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  Location loc = NameLoc::get(StringAttr::get(ctx, name), fileLoc());
  // The dynamo exporter records the module path of every node as
  // "namespace": ": Model/layers.0: Block/layers.0.mlp: MLP/linear_4: op".
  // Keep the names before each ": " as the node's scope.
  // NodeProto.metadata_props (field 9, IR version 10) is newer than the
  // Debian ONNX headers, so it arrives as an unknown field.
  const auto &unknown = node.unknown_fields();
  for (int i = 0, e = unknown.field_count(); i < e; ++i) {
    const auto &field = unknown.field(i);
    onnx::StringStringEntryProto prop;
    if (field.number() != kNodeMetadataPropsField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !prop.ParseFromString(field.length_delimited()) ||
        prop.key() != "namespace")
      continue;
    SmallVector<StringRef> segments;
    StringRef(prop.value()).split(segments, '/');
    std::string scope;
    for (StringRef segment : segments) {
      StringRef module = segment.split(": ").first.trim();
      if (!module.empty() && !module.starts_with(":"))
        scope += "/" + module.str();
    }
    if (scope.empty())
      break;
    NamedAttribute entry(StringAttr::get(ctx, kOnnxScopeKey),
                         StringAttr::get(ctx, scope));
    return FusedLoc::get(ctx, {loc}, DictionaryAttr::get(ctx, {entry}));
  }
  return loc;
}

/// The types of the attributes that the converters read, by name (ONNX's
/// operator schemas agree on each across the ops memfit converts). A
/// converter reads an attribute's field without looking at its type, so a
/// value of another type is refused before conversion.
static std::optional<onnx::AttributeProto::AttributeType>
expectedAttributeType(StringRef name) {
  using A = onnx::AttributeProto;
  static const std::pair<StringRef, A::AttributeType> table[] = {
      {"allowzero", A::INT},
      {"alpha", A::FLOAT},
      {"approximate", A::STRING},
      {"axes", A::INTS},
      {"axis", A::INT},
      {"beta", A::FLOAT},
      {"end", A::INT},
      {"epsilon", A::FLOAT},
      {"equation", A::STRING},
      {"ignore_index", A::INT},
      {"keepdims", A::INT},
      {"noop_with_empty_axes", A::INT},
      {"num_outputs", A::INT},
      {"perm", A::INTS},
      {"reduction", A::STRING},
      {"seed", A::INT},
      {"start", A::INT},
      {"to", A::INT},
      {"transA", A::INT},
      {"transB", A::INT},
      {"upper", A::INT},
      {"value", A::TENSOR},
      {"value_float", A::FLOAT},
      {"value_floats", A::FLOATS},
      {"value_int", A::INT},
      {"value_ints", A::INTS}};
  for (auto [key, type] : table)
    if (key == name)
      return type;
  return std::nullopt;
}

/// The name of an AttributeProto type, for diagnostics.
static std::string attributeTypeName(int type) {
  if (onnx::AttributeProto_AttributeType_IsValid(type))
    return onnx::AttributeProto_AttributeType_Name(
        static_cast<onnx::AttributeProto::AttributeType>(type));
  return "type " + std::to_string(type);
}

LogicalResult GraphImporter::checkAttributes(NodeContext &nc) {
  for (const onnx::AttributeProto &a : nc.node.attribute()) {
    std::optional<onnx::AttributeProto::AttributeType> want =
        expectedAttributeType(a.name());
    if (want && a.type() != *want)
      return nc.error() << "attribute '" << a.name() << "' is "
                        << (a.type() == onnx::AttributeProto::UNDEFINED
                                ? std::string("untyped")
                                : "of type " + attributeTypeName(a.type()))
                        << " but must be of type " << attributeTypeName(*want);
  }
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        int64_t index) {
  Location loc = nodeLoc(node, index);
  const OpConverter *conv =
      lookupConverter(node.domain(), node.op_type(), opsetOf(node.domain()));
  std::string holder;
  auto loadConstant = [&](const onnx::TensorProto &t) {
    return tensors.load(t, loc, node.name().empty() ? "constant" : node.name(),
                        holder);
  };
  NodeContext nc(node, loc, builder, opset, values, loadConstant);
  holder = "ONNX node '" + nc.name() + "' (" + node.op_type() + "): ";
  // Resolve inputs: earlier results, graph inputs, or initializers.
  for (const std::string &name : node.input()) {
    if (name.empty() || values.count(name))
      continue;
    auto init = initializers.find(name);
    if (init == initializers.end())
      return nc.error() << "input '" << name
                        << "' is neither a graph input, an initializer nor "
                           "the output of an earlier node";
    auto [value, isParameter] = init->second;
    Location iloc = NameLoc::get(StringAttr::get(ctx, name), fileLoc());
    if (isParameter)
      values[name] = LoadParameterOp::create(
          builder, iloc, cast<RankedTensorType>(value.getType()),
          FlatSymbolRefAttr::get(ctx, name));
    else
      values[name] = ConstantOp::create(builder, iloc, value);
  }
  int64_t n = nc.numInputs();
  if (n < conv->minInputs || n > conv->maxInputs) {
    InFlightDiagnostic d = nc.error();
    d << "has " << n << " input" << (n == 1 ? "" : "s") << " but "
      << node.op_type() << " takes ";
    if (conv->minInputs == conv->maxInputs)
      d << conv->minInputs;
    else
      d << conv->minInputs << " to " << conv->maxInputs;
    return failure();
  }
  for (int64_t i = 0; i < n; ++i) {
    if (i < conv->minInputs && !nc.hasInput(i))
      return nc.error() << "input " << i << " has an empty name, but "
                        << node.op_type() << " needs it";
    Value v = nc.input(i);
    if (v && !isa<RankedTensorType>(v.getType()))
      return nc.error() << "input '" << node.input(i) << "' is not a tensor";
  }
  if (failed(checkAttributes(nc)))
    return failure();
  Block *block = builder.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  if (failed(conv->convert(nc)))
    return failure();
  // Check every op the node became (element types, say) now, so that a
  // problem is reported on the node rather than by the module verifier.
  auto it = last ? std::next(last->getIterator()) : block->begin();
  for (Operation &op : llvm::make_range(it, block->end())) {
    // Every later size computation assumes that a tensor's elements and
    // bytes can be counted in 64 bits; a shape computed from the model's
    // constants (Reshape, Expand, ConstantOfShape, ...) may not.
    for (Type t : op.getResultTypes())
      if (auto type = dyn_cast<RankedTensorType>(t);
          type && type.getElementType().isIntOrFloat() &&
          !checkedNumElements(type.getShape(),
                              byteWidth(type.getElementType())))
        return nc.error() << "result of shape "
                          << shapeToString(type.getShape())
                          << " has more elements than 64-bit sizes can count"
                          << " (inputs: " << nc.describeInputs() << ")";
    std::string why;
    if (failed(captureDiagnostic(ctx, why, [&] {
          return verify(&op, /*verifyRecursively=*/false);
        })))
      return nc.error() << why << " (inputs: " << nc.describeInputs() << ")";
  }
  return success();
}
