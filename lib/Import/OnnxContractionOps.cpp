//===- OnnxContractionOps.cpp - MatMul, Gemm and Einsum converters --------===//
//
// The contractions: MatMul and Gemm are memfit ops; Einsum is written as
// them: a product without summed indices broadcasts and multiplies, any
// other equation sums each operand over the indices only it has, then
// contracts the operands pairwise, left to right, as batched MatMuls of
// operands transposed and reshaped to (batch, rows, shared) and (batch,
// shared, columns).
//
//===----------------------------------------------------------------------===//

#include "ConverterHelpers.h"

#include "llvm/ADT/DenseMap.h"

#include <cctype>
#include <map>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::onnx_import;

namespace {

/// Gemm: alpha * A' * B' + beta * C, A and B optionally transposed.
LogicalResult convertGemm(NodeContext &n) {
  SmallVector<Value> operands{n.input(0), n.input(1)};
  if (n.hasInput(2))
    operands.push_back(n.input(2));
  SmallVector<NamedAttribute> attrs{
      n.named("alpha", n.b.getF32FloatAttr(n.floatAttr("alpha", 1.0f))),
      n.named("beta", n.b.getF32FloatAttr(n.floatAttr("beta", 1.0f))),
      n.named("trans_a", n.b.getBoolAttr(n.intAttr("transA", 0))),
      n.named("trans_b", n.b.getBoolAttr(n.intAttr("transB", 0)))};
  FailureOr<Value> r = n.build<GemmOp>(operands, attrs);
  return failed(r) ? failure() : n.setResults(*r);
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// Einsum without summed indices, whose every index is in the output (an
/// outer or element-wise product, as torch.outer exports): each operand is
/// transposed into the output's order, unsqueezed where it lacks an output
/// index, and the results broadcast and multiplied.
LogicalResult convertEinsumProduct(NodeContext &n, ArrayRef<StringRef> terms,
                                   StringRef out) {
  Value acc;
  for (auto [i, term] : llvm::enumerate(terms)) {
    // Order this operand's indices as in the output, then add the missing.
    SmallVector<int64_t> perm;
    std::string ordered;
    for (char c : out)
      if (size_t p = term.find(c); p != StringRef::npos) {
        perm.push_back(p);
        ordered += c;
      }
    FailureOr<Value> v = n.build<TransposeOp>(
        n.input(i), {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
    if (failed(v))
      return failure();
    SmallVector<int64_t> missing;
    for (auto [k, c] : llvm::enumerate(out))
      if (ordered.find(c) == std::string::npos)
        missing.push_back(k);
    if (!missing.empty()) {
      v = n.build<UnsqueezeOp>(
          *v, {n.named("axes", n.b.getDenseI64ArrayAttr(missing))});
      if (failed(v))
        return failure();
    }
    if (!acc) {
      acc = *v;
      continue;
    }
    FailureOr<Value> m = n.build<MulOp>({acc, *v});
    if (failed(m))
      return failure();
    acc = *m;
  }
  return n.setResults(acc);
}

/// An Einsum operand or partial result: its value and its index letters.
struct EinsumTerm {
  Value value;
  std::string letters;
};

/// Sums `t` over its letters that are not in `keep`.
FailureOr<EinsumTerm> sumOut(NodeContext &n, EinsumTerm t, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string rest;
  for (auto [i, c] : llvm::enumerate(t.letters)) {
    if (keep.contains(c))
      rest += c;
    else
      axes.push_back(i);
  }
  if (axes.empty())
    return t;
  FailureOr<Value> r = n.build<ReduceSumOp>(
      t.value, {n.named("axes", n.b.getDenseI64ArrayAttr(axes)),
                n.named("keepdims", n.b.getBoolAttr(false))});
  if (failed(r))
    return failure();
  return EinsumTerm{*r, rest};
}

/// `t` with its letters in the order of `order` (a permutation of them).
FailureOr<Value> permuted(NodeContext &n, const EinsumTerm &t,
                          StringRef order) {
  SmallVector<int64_t> perm;
  for (char c : order)
    perm.push_back(t.letters.find(c));
  return n.build<TransposeOp>(
      t.value, {n.named("perm", n.b.getDenseI64ArrayAttr(perm))});
}

/// a * b summed over the letters they share that are not in `keep`: a
/// batched MatMul of a as (batch, a's own, shared) and b as (batch,
/// shared, b's own), where batch are the shared letters kept.
FailureOr<EinsumTerm> contract(NodeContext &n, EinsumTerm a, EinsumTerm b,
                               StringRef keep,
                               const llvm::DenseMap<char, int64_t> &size) {
  std::string batch, own, shared, other;
  for (char c : a.letters) {
    if (b.letters.find(c) == std::string::npos)
      own += c;
    else if (keep.contains(c))
      batch += c;
    else
      shared += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos)
      other += c;
  bool overflow = false;
  auto extent = [&](StringRef letters) {
    int64_t p = 1;
    for (char c : letters)
      overflow |= llvm::MulOverflow(p, size.lookup(c), p);
    return p;
  };
  Type elt = eltOf(a.value);
  auto reshaped = [&](const EinsumTerm &t, StringRef order,
                      ArrayRef<int64_t> dims) -> FailureOr<Value> {
    FailureOr<Value> v = permuted(n, t, order);
    if (failed(v))
      return failure();
    return n.buildTyped<ReshapeOp>(RankedTensorType::get(dims, elt), *v);
  };
  int64_t bt = extent(batch), m = extent(own), k = extent(shared),
          nn = extent(other);
  extent(batch + own + other);
  if (overflow)
    return n.error() << "the contraction's sizes overflow 64 bits", failure();
  FailureOr<Value> lhs = reshaped(a, batch + own + shared, {bt, m, k});
  FailureOr<Value> rhs = reshaped(b, batch + shared + other, {bt, k, nn});
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<Value> product = n.build<MatMulOp>({*lhs, *rhs});
  if (failed(product))
    return failure();
  std::string letters = batch + own + other;
  SmallVector<int64_t> dims;
  for (char c : letters)
    dims.push_back(size.lookup(c));
  return EinsumTerm{
      n.buildTyped<ReshapeOp>(RankedTensorType::get(dims, elt), *product),
      letters};
}

/// Einsum: an explicit '->' output, or the implicit one (the letters used
/// once, in alphabetical order); no ellipsis, no letter repeated within a
/// term (a diagonal). Products without summation broadcast and multiply;
/// otherwise each operand is summed over the letters no one else uses,
/// then operands are contracted pairwise, left to right, with MatMul.
LogicalResult convertEinsum(NodeContext &n) {
  std::string eq = n.stringAttr("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos)
    return n.error() << "equation '" << eq
                     << "' is not supported (an ellipsis)";
  auto arrow = eq.find("->");
  SmallVector<StringRef> terms;
  StringRef(eq).substr(0, arrow).split(terms, ',');
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    std::map<char, int> uses;
    for (StringRef term : terms)
      for (char c : term)
        ++uses[c];
    for (auto [c, k] : uses)
      if (k == 1)
        out += c;
  }
  if (static_cast<int64_t>(terms.size()) != n.numInputs())
    return n.error() << "equation '" << eq << "' names " << terms.size()
                     << " operands but the node has " << n.numInputs();
  // The products and contractions are of one element type (each reshape
  // keeps its operand's).
  for (int64_t i = 1; i < n.numInputs(); ++i)
    if (n.inputType(i).getElementType() != n.inputType(0).getElementType())
      return n.error() << "operands have different element types "
                       << n.inputType(0).getElementType() << " and "
                       << n.inputType(i).getElementType()
                       << " (inputs: " << n.describeInputs() << ")";
  llvm::DenseMap<char, int64_t> size;
  bool product = true;
  SmallVector<EinsumTerm> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    if (static_cast<int64_t>(term.size()) != n.inputType(i).getRank())
      return n.error() << "equation term '" << term << "' does not match the "
                       << "rank of input " << i;
    for (auto [d, c] : llvm::enumerate(term)) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return n.error() << "equation '" << eq << "' has '" << c
                         << "', not a letter";
      if (term.count(c) != 1)
        return n.error()
               << "equation '" << eq << "' repeats index '" << c
               << "' in one term (a diagonal), which is not supported";
      int64_t dim = n.inputType(i).getDimSize(d);
      auto [it, inserted] = size.try_emplace(c, dim);
      if (!inserted && it->second != dim)
        return n.error() << "equation '" << eq << "': index '" << c
                         << "' has sizes " << it->second << " and " << dim;
      product &= out.find(c) != std::string::npos;
    }
    operands.push_back({n.input(i), term.str()});
  }
  for (char c : out)
    if (!size.count(c) || llvm::count(out, c) != 1)
      return n.error() << "equation '" << eq << "': output index '" << c
                       << "' is not an input index or is repeated";
  if (product)
    return convertEinsumProduct(n, terms, out);
  // Each operand summed over the letters that neither the output nor
  // another operand has, then contracted left to right, keeping what the
  // output or a later operand needs.
  EinsumTerm acc;
  for (auto [i, t] : llvm::enumerate(operands)) {
    std::string keep = out;
    for (auto [j, u] : llvm::enumerate(operands))
      if (j != i)
        keep += u.letters;
    FailureOr<EinsumTerm> summed = sumOut(n, t, keep);
    if (failed(summed))
      return failure();
    if (i == 0) {
      acc = *summed;
      continue;
    }
    keep = out;
    for (size_t j = i + 1; j < operands.size(); ++j)
      keep += operands[j].letters;
    FailureOr<EinsumTerm> next = contract(n, acc, *summed, keep, size);
    if (failed(next))
      return failure();
    acc = *next;
  }
  FailureOr<EinsumTerm> last = sumOut(n, acc, out);
  if (failed(last))
    return failure();
  FailureOr<Value> r = permuted(n, *last, out);
  return failed(r) ? failure() : n.setResults(*r);
}

} // namespace

void onnx_import::populateContractionConverters(OpTable &table) {
  table.onOp("MatMul", 13, 2, 2, convertBinary<MatMulOp>);
  table.onOp("Gemm", 13, 2, 3, convertGemm);
  table.onOp("Einsum", 13, 1, kVariadic, convertEinsum);
}
