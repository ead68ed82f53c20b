//===- GraphImporter.cpp - an ONNX graph into a memfit function -----------===//
//
// Checks the model's opsets and ops up front (so that an unsupported graph
// gets one diagnostic listing what is missing), imports the initializers,
// makes the graph inputs the function's arguments (or constants with
// --input-value), converts the nodes in order through the op table, checks
// the graph outputs against their declared shapes, and erases what the
// folded shape computations left unused.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "OpTable.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

LogicalResult GraphImporter::checkOpsets(const onnx::ModelProto &model) {
  for (const auto &o : model.opset_import()) {
    opsetImports.emplace_back(o.domain(), o.version());
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  }
  if (opset == 0)
    return emitError(fileLoc())
           << "model imports no opset of the default ONNX domain";
  if (opset > kMaxOnnxOpset)
    return emitError(fileLoc())
           << "model uses opset " << opset << " of domain 'ai.onnx'; memfit "
           << "supports opsets " << kMinOnnxOpset << " to " << kMaxOnnxOpset
           << " (re-export with an older opset_version)";
  if (opset < kMinOnnxOpset)
    return emitError(fileLoc())
           << "model uses opset " << opset << " of domain 'ai.onnx'; memfit "
           << "supports opsets " << kMinOnnxOpset << " to " << kMaxOnnxOpset
           << " (re-export with opset_version >= " << kMinOnnxOpset << ")";
  return success();
}

LogicalResult GraphImporter::checkOps(const onnx::GraphProto &graph) {
  // Collect every unsupported (domain, op type) first, so one diagnostic
  // says how much of the graph is missing.
  const onnx::NodeProto *first = nullptr;
  int64_t firstIndex = 0;
  std::map<std::string, int64_t> unsupported;
  auto isDefaultDomain = [](const onnx::NodeProto &node) {
    return node.domain().empty() || node.domain() == "ai.onnx";
  };
  auto opKey = [&](const onnx::NodeProto &node) {
    return (isDefaultDomain(node) ? "" : node.domain() + ".") + node.op_type();
  };
  for (auto [i, node] : llvm::enumerate(graph.node())) {
    if (lookupConverter(node.domain(), node.op_type(), opsetOf(node.domain())))
      continue;
    std::string key = opKey(node);
    if (!first) {
      first = &node;
      firstIndex = i;
    }
    ++unsupported[key];
  }
  if (!first)
    return success();
  std::string domain = isDefaultDomain(*first) ? "ai.onnx" : first->domain();
  Location firstLoc = nodeLoc(*first, firstIndex);
  InFlightDiagnostic diag = emitError(firstLoc);
  int64_t domainVersion = opset;
  for (const auto &o : opsetImports)
    if (o.first == first->domain())
      domainVersion = o.second;
  diag << "unsupported ONNX op '" << first->op_type() << "' (domain '"
       << domain << "', opset " << domainVersion << ") at node '"
       << onnxNodeName(firstLoc) << "'";
  std::string firstKey = opKey(*first);
  int64_t others = -1;
  for (auto &[k, n] : unsupported)
    others += n;
  if (others == 0) {
    diag << "; it is the only unsupported op in the graph";
  } else {
    diag << "; the graph has " << others << " other unsupported op"
         << (others == 1 ? "" : "s") << ":";
    for (auto &[k, n] : unsupported) {
      int64_t count = k == firstKey ? n - 1 : n;
      if (count > 0)
        diag << " " << k << " x" << count;
    }
  }
  // onnxruntime's contrib ops come from its transformer optimizer's fusions
  // (SkipLayerNormalization, FastGelu, Attention...), not from exporters.
  if (llvm::any_of(unsupported, [](const auto &entry) {
        return StringRef(entry.first).starts_with("com.microsoft.");
      }))
    diag << "; the 'com.microsoft' ops are onnxruntime's fused kernels, which "
            "its transformer optimizer writes: give memfit the model as "
            "torch.onnx.export wrote it, before "
            "onnxruntime.transformers.optimizer";
  // Opset 23's rotary embedding op, which exporters write at that opset.
  if (unsupported.count("RotaryEmbedding"))
    diag << "; memfit does not convert opset 23's RotaryEmbedding: export "
            "with opset 22 or lower (torch.onnx.export(..., "
            "opset_version=18)), where rotary embeddings are spelled out in "
            "element-wise ops";
  return failure();
}

LogicalResult GraphImporter::checkOutput(const onnx::ValueInfoProto &info,
                                         Value v) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
    return success();
  auto type = cast<RankedTensorType>(v.getType());
  const auto &dims = info.type().tensor_type().shape().dim();
  bool mismatch = dims.size() != type.getRank();
  for (int i = 0; !mismatch && i < dims.size(); ++i)
    mismatch =
        dims[i].has_dim_value() && dims[i].dim_value() != type.getDimSize(i);
  if (!mismatch)
    return success();
  std::string declared;
  for (int i = 0; i < dims.size(); ++i)
    declared += (i ? "x" : "") + (dims[i].has_dim_value()
                                      ? std::to_string(dims[i].dim_value())
                                      : dims[i].dim_param().empty()
                                            ? std::string("?")
                                            : dims[i].dim_param());
  return emitError(v.getLoc())
         << "graph output '" << info.name() << "' is declared "
         << (declared.empty() ? "scalar" : declared) << " but computes "
         << shapeToString(type.getShape());
}

OwningOpRef<ModuleOp> GraphImporter::run(const onnx::ModelProto &model) {
  if (!model.has_graph())
    return emitError(fileLoc()) << "not an ONNX model: it has no graph",
           nullptr;
  if (failed(checkOpsets(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  if (failed(checkOps(graph)))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  if (failed(importInitializers(graph, *module)))
    return nullptr;

  // Graph inputs that are not initializers become function arguments, or
  // constants when --input-value gives their values.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<std::pair<std::string, DenseElementsAttr>> givenValues;
  for (const auto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue;
    if (options.inputValues.count(in.name())) {
      FailureOr<DenseElementsAttr> value = givenValue(in);
      if (failed(value))
        return nullptr;
      givenValues.push_back({in.name(), *value});
      continue;
    }
    FailureOr<RankedTensorType> t = inputType(in);
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
  }
  // A --input-value entry must name a graph input.
  for (const auto &entry : options.inputValues) {
    StringRef key = entry.getKey();
    if (llvm::any_of(graph.input(), [&](const onnx::ValueInfoProto &in) {
          return in.name() == key && !initializers.count(in.name());
        }))
      continue;
    std::string names;
    for (const auto &in : graph.input())
      if (!initializers.count(in.name()))
        names += (names.empty() ? "" : ", ") + in.name();
    return emitError(fileLoc())
               << "--input-value names '" << key
               << "', which is not a graph input (inputs: " << names << ")",
           nullptr;
  }
  // A --input-shape entry must name a graph input or a symbolic dimension.
  for (const auto &entry : options.inputShapes) {
    StringRef key = entry.getKey();
    if (llvm::is_contained(argNames, key.str()) || dimBindings.count(key))
      continue;
    std::string names;
    for (const auto &n : argNames)
      names += (names.empty() ? "" : ", ") + n;
    for (const auto &d : dimBindings)
      names += ", " + d.getKey().str();
    return emitError(fileLoc())
               << "--input-shape names '" << key
               << "', which is neither a graph input nor a symbolic "
                  "dimension of one (known: "
               << names << ")",
           nullptr;
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc(), options.funcName,
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "onnx.name", builder.getStringAttr(name));
    values[name] = entry->getArgument(i);
  }
  builder.setInsertionPointToStart(entry);
  for (auto &[name, value] : givenValues)
    values[name] = ConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(name), fileLoc()), value);

  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return nullptr;

  SmallVector<Value> results;
  llvm::StringSet<> outputNames;
  for (const auto &out : graph.output()) {
    // The runtime names each output (found by memfit-compile-fuzz: the
    // emitter's manifest check refused the duplicate, after the pipeline).
    if (!outputNames.insert(out.name()).second)
      return emitError(fileLoc()) << "graph output '" << out.name()
                                  << "' is listed twice",
             nullptr;
    Value v = values.lookup(out.name());
    if (!v) {
      auto init = initializers.find(out.name());
      if (init == initializers.end())
        return emitError(fileLoc()) << "graph output '" << out.name()
                                    << "' is not computed by any node",
               nullptr;
      v = ConstantOp::create(builder, fileLoc(), init->second.first);
    }
    if (failed(checkOutput(out, v)))
      return nullptr;
    results.push_back(v);
  }
  func::ReturnOp::create(builder, fileLoc(), results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "onnx.name", builder.getStringAttr(out.name()));

  // Shape computations folded to constants leave their inputs unused.
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();

  if (failed(verify(*module)))
    return nullptr;
  return module;
}
