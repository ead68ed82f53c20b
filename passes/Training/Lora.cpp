//===- Lora.cpp - memfit-lora: low-rank adapters on the contractions ------===//
//
// Adds PEFT's LoRA update, scale * (dropout(x) @ A^T) @ B^T, to every
// targeted contraction x @ W of the forward model, with A and B new
// trainable parameters, and freezes every other parameter. See the pass
// description in Passes.td and docs/training.md.
//
//===----------------------------------------------------------------------===//

#include "memfit/Dialect/Gradients.h"
#include "memfit/Dialect/MemfitOps.h"
#include "memfit/Dialect/Training.h"
#include "memfit/Passes/Passes.h"
#include "memfit/Support/GlobList.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

namespace mlir::memfit {
#define GEN_PASS_DEF_MEMFITLORAPASS
#include "memfit/Passes/Passes.h.inc"
} // namespace mlir::memfit

using namespace mlir;
using namespace mlir::memfit;

uint64_t mlir::memfit::loraSeed(int64_t seed, StringRef name) {
  // FNV-1a of the name, mixed with the seed.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash ^ (static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ull);
}

double mlir::memfit::loraUniform(uint64_t state, uint64_t index) {
  // splitmix64 at position index + 1.
  uint64_t z = state + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-53;
}

namespace {

/// A contraction that LoRA can adapt: y = x @ W with W a 2-D parameter.
struct Contraction {
  Operation *op;
  Value input;        // x, [..., in]
  ParameterOp weight; // W
  bool transposed;    // W is stored [out, in]: y = x @ W^T
  int64_t in, out;
  std::string module; // the PyTorch module path, or the weight's name
  std::string node, scope;
};

/// The parameter that `value` reads through transposes and casts, if it
/// is a 2-D float parameter; `transposes` counts the transposes.
ParameterOp weightParameter(Value value, SymbolTable &symbols,
                            int *transposes = nullptr) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<TransposeOp, CastOp>(def)) {
      if (transposes && isa<TransposeOp>(def))
        ++*transposes;
      value = def->getOperand(0);
      continue;
    }
    auto load = dyn_cast<LoadParameterOp>(def);
    if (!load)
      return {};
    auto param = symbols.lookup<ParameterOp>(load.getName());
    if (!param || param.getType().getRank() != 2 ||
        !isa<FloatType>(param.getType().getElementType()))
      return {};
    return param;
  }
  return {};
}

std::optional<Contraction> asContraction(Operation *op, SymbolTable &symbols) {
  Value x, w;
  bool transB = false;
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    x = matmul.getLhs();
    w = matmul.getRhs();
    if (cast<RankedTensorType>(w.getType()).getRank() != 2)
      return std::nullopt;
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getTransA())
      return std::nullopt;
    x = gemm.getA();
    w = gemm.getB();
    transB = gemm.getTransB();
  } else {
    return std::nullopt;
  }
  int transposes = 0;
  ParameterOp param = weightParameter(w, symbols, &transposes);
  if (!param || weightParameter(x, symbols))
    return std::nullopt;
  Contraction c;
  c.op = op;
  c.transposed = transB != (transposes % 2 == 1);
  c.input = x;
  c.weight = param;
  c.in = cast<RankedTensorType>(x.getType()).getShape().back();
  c.out = cast<RankedTensorType>(op->getResult(0).getType()).getShape().back();
  c.node = onnxNodeName(op->getLoc()).str();
  c.scope = onnxNodeScope(op->getLoc()).str();
  c.module = onnxModulePath(op->getLoc());
  if (c.module.empty())
    c.module = param.getSymName().str();
  return c;
}

/// Whether a module path belongs to attention: a component with "attn" or
/// "attention".
bool isAttention(StringRef module) {
  SmallVector<StringRef> parts;
  module.split(parts, '.');
  return llvm::any_of(parts, [](StringRef part) {
    std::string lower = part.lower();
    return StringRef(lower).contains("attn") ||
           StringRef(lower).contains("attention");
  });
}

struct MemfitLoraPass
    : public mlir::memfit::impl::MemfitLoraPassBase<MemfitLoraPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (rank < 1)
      return module.emitError("memfit-lora: rank must be at least 1, got ")
             << static_cast<int64_t>(rank);
    if (!(alpha > 0) || !std::isfinite(alpha))
      return module.emitError("memfit-lora: alpha must be positive, got ")
             << alpha;
    if (!(dropout >= 0 && dropout < 1))
      return module.emitError("memfit-lora: dropout must be in [0, 1), got ")
             << dropout;
    // Roles and globs.
    bool attention = false, mlp = false;
    SmallVector<std::string> globs;
    ArrayRef<std::string> given = targets;
    SmallVector<std::string> defaults{"attention"};
    for (const std::string &target :
         given.empty() ? ArrayRef(defaults) : given) {
      if (target == "attention")
        attention = true;
      else if (target == "mlp")
        mlp = true;
      else if (target == "all-linear")
        attention = mlp = true;
      else
        globs.push_back(target);
    }
    GlobList include, skip;
    std::string error;
    if (!include.parse(globs, "targets", error) ||
        !skip.parse(exclude, "exclude", error))
      return module.emitError("memfit-lora: ") << error;

    SymbolTable symbols(module);
    SmallVector<Contraction> chosen;
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](Operation *op) {
        std::optional<Contraction> c = asContraction(op, symbols);
        if (!c)
          return;
        auto matches = [&](const GlobList &list) {
          return list.match(c->module) ||
                 (!c->node.empty() && list.match(c->node)) ||
                 (!c->scope.empty() && list.match(c->scope));
        };
        bool inLayer = layerIndex(c->module) >= 0;
        bool byRole = inLayer && (isAttention(c->module) ? attention : mlp);
        if ((byRole || (!globs.empty() && matches(include))) && !matches(skip))
          chosen.push_back(std::move(*c));
      });
    if (chosen.empty())
      return module.emitError("memfit-lora: no contraction matches the "
                              "targets; a target is attention, mlp, "
                              "all-linear or a glob over module paths such "
                              "as 'h.*.attn.c_attn'");

    // Freeze the base: every parameter but the adapters.
    Builder b(module.getContext());
    for (auto param : module.getOps<ParameterOp>())
      if (isTrainableCandidate(param))
        param->setAttr(kRoleAttr, b.getStringAttr(kRoleFrozen));

    double scale = rslora ? alpha / std::sqrt(double(rank)) : alpha / rank;
    llvm::StringSet<> taken;
    for (Contraction &c : chosen)
      addAdapter(module, symbols, c, scale, taken);
    return success();
  }

  /// The adapter parameter `<module>.lora_<which>.weight` of `type`, its
  /// values from `init`, after `after` (else after the base weight).
  ParameterOp addParameter(SymbolTable &symbols, Contraction &c,
                           Operation *after, StringRef base, StringRef which,
                           RankedTensorType type, ArrayRef<float> init) {
    OpBuilder builder(c.weight);
    builder.setInsertionPointAfter(after ? after : c.weight.getOperation());
    std::string name = (base + ".lora_" + which + ".weight").str();
    ArrayRef<char> bytes(reinterpret_cast<const char *>(init.data()),
                         init.size() * sizeof(float));
    auto param = ParameterOp::create(builder, c.weight.getLoc(),
                                     builder.getStringAttr(name),
                                     elementsFromBytes(type, bytes, name));
    param->setAttr(kRoleAttr, builder.getStringAttr(kRoleParameter));
    param->setAttr(kLoraOfAttr, c.weight.getSymNameAttr());
    param->setAttr(kLoraAttr, builder.getStringAttr(which));
    symbols.insert(param);
    return param;
  }

  void addAdapter(ModuleOp module, SymbolTable &symbols, Contraction &c,
                  double scale, llvm::StringSet<> &taken) {
    MLIRContext *ctx = module.getContext();
    // One adapter per contraction: a module with two gets "_1", "_2"...
    std::string base = c.module;
    for (int k = 1; !taken.insert(base).second; ++k)
      base = c.module + "_" + std::to_string(k);
    Type f32 = Float32Type::get(ctx);
    auto typeA = RankedTensorType::get({rank, c.in}, f32);
    auto typeB = RankedTensorType::get({c.out, rank}, f32);
    // A: Kaiming-uniform with a = sqrt(5), PEFT's default, which is
    // uniform in [-1/sqrt(in), 1/sqrt(in)); B: zero.
    std::string nameA = base + ".lora_A.weight";
    uint64_t state = loraSeed(seed, nameA);
    double bound = 1.0 / std::sqrt(double(c.in));
    SmallVector<float> initA(rank * c.in);
    for (auto [k, v] : llvm::enumerate(initA))
      v = static_cast<float>(bound * (2 * loraUniform(state, k) - 1));
    SmallVector<float> initB(c.out * rank, 0.0f);
    ParameterOp a = addParameter(symbols, c, nullptr, base, "A", typeA, initA);
    a->setAttr(kLoraScaleAttr, FloatAttr::get(Float64Type::get(ctx), scale));
    a->setAttr(kLoraTransposedAttr, BoolAttr::get(ctx, c.transposed));
    ParameterOp bp = addParameter(symbols, c, a, base, "B", typeB, initB);

    // After the contraction: y + scale * (x @ A^T) @ B^T, in x's type.
    Value y = c.op->getResult(0);
    OpBuilder builder(c.op);
    builder.setInsertionPointAfter(c.op);
    Location loc =
        NameLoc::get(StringAttr::get(ctx, base + ".lora"), c.op->getLoc());
    auto elt = cast<RankedTensorType>(c.input.getType()).getElementType();
    auto load = [&](ParameterOp p) -> Value {
      Value v =
          LoadParameterOp::create(builder, loc, p.getType(),
                                  FlatSymbolRefAttr::get(p.getSymNameAttr()));
      if (elt != f32)
        v = CastOp::create(builder, loc,
                           RankedTensorType::get(p.getType().getShape(), elt),
                           v, builder.getStringAttr("lora"));
      return TransposeOp::create(builder, loc, v, ArrayRef<int64_t>{1, 0});
    };
    // PEFT's lora_dropout of the adapter's input, a stream of its own per
    // adapter; memfit-dropout-step gives it the training step.
    Value x = c.input;
    if (dropout > 0)
      x = DropoutOp::create(
          builder, loc, x.getType(), x, /*dropout_step=*/Value(),
          builder.getF32FloatAttr(static_cast<float>(dropout)),
          builder.getI64IntegerAttr(seed),
          builder.getI64IntegerAttr(static_cast<int64_t>(
              llvm::xxh3_64bits(base + ".lora_dropout") >> 1)));
    Value t = MatMulOp::create(builder, loc, x, load(a));
    Value u = MatMulOp::create(builder, loc, t, load(bp));
    Value s =
        splatConstant(builder, loc, RankedTensorType::get({}, elt), scale);
    Value scaled = MulOp::create(builder, loc, u, s);
    auto sum = AddOp::create(builder, loc, y, scaled);
    y.replaceAllUsesExcept(sum.getResult(), sum);
    // Every op of the adapter names its target.
    auto target = StringAttr::get(ctx, c.module);
    for (Operation *op = c.op->getNextNode(); op != sum->getNextNode();
         op = op->getNextNode())
      op->setAttr(kLoraTargetAttr, target);
  }
};

} // namespace
