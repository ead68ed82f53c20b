//===- ShapeInference.cpp - shape rules of memfit ops -----------------------===//

#include "memfit/Dialect/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;
using namespace mlir::memfit;

std::string mlir::memfit::shapeToString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

int64_t mlir::memfit::elementBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

int64_t mlir::memfit::tensorBytes(RankedTensorType type) {
  return type.getNumElements() * elementBytes(type.getElementType());
}

int64_t mlir::memfit::getNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

ArrayRef<int64_t> mlir::memfit::shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

Type mlir::memfit::eltOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

Shape mlir::memfit::stridesOf(ArrayRef<int64_t> shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

FailureOr<int64_t> mlir::memfit::normalizeAxis(int64_t axis, int64_t rank,
                                               OptLoc loc, StringRef what) {
  if (axis < -rank || axis >= rank) {
    (void)emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                            rank, " (expected [", -rank, ", ", rank, "))");
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

LogicalResult
mlir::memfit::inferBroadcastShape(ArrayRef<ArrayRef<int64_t>> shapes,
                                  Shape &result, OptLoc loc) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  result.assign(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (auto [i, d] : llvm::enumerate(s)) {
      int64_t &r = result[offset + i];
      if (d == r || d == 1)
        continue;
      if (r == 1) {
        r = d;
        continue;
      }
      std::string all;
      llvm::raw_string_ostream os(all);
      llvm::interleave(shapes, os,
                       [&](ArrayRef<int64_t> x) { os << shapeToString(x); },
                       ", ");
      return emitOptionalError(loc, "shapes ", all,
                               " do not broadcast: dimension ", d,
                               " does not match ", r);
    }
  }
  return success();
}

bool mlir::memfit::isBroadcastableTo(ArrayRef<int64_t> from,
                                     ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (auto [i, d] : llvm::enumerate(from))
    if (d != 1 && d != to[offset + i])
      return false;
  return true;
}

LogicalResult mlir::memfit::inferMatMulShape(ArrayRef<int64_t> lhs,
                                             ArrayRef<int64_t> rhs,
                                             Shape &result, OptLoc loc) {
  if (lhs.empty() || rhs.empty())
    return emitOptionalError(loc, "matmul operands must have rank >= 1, got ",
                             shapeToString(lhs), " and ", shapeToString(rhs));
  Shape a(lhs), b(rhs);
  bool vecL = a.size() == 1, vecR = b.size() == 1;
  if (vecL)
    a.insert(a.begin(), 1);
  if (vecR)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back();
  int64_t k2 = b[b.size() - 2], n = b.back();
  if (k != k2)
    return emitOptionalError(loc, "matmul contraction dimensions differ: ",
                             shapeToString(lhs), " times ", shapeToString(rhs),
                             " (", k, " vs ", k2, ")");
  Shape batch;
  if (failed(inferBroadcastShape({ArrayRef(a).drop_back(2),
                                  ArrayRef(b).drop_back(2)},
                                 batch, loc)))
    return failure();
  result = batch;
  if (!vecL)
    result.push_back(m);
  if (!vecR)
    result.push_back(n);
  return success();
}

LogicalResult mlir::memfit::inferGemmShape(ArrayRef<int64_t> a,
                                           ArrayRef<int64_t> b,
                                           std::optional<ArrayRef<int64_t>> c,
                                           bool transA, bool transB,
                                           Shape &result, OptLoc loc) {
  if (a.size() != 2 || b.size() != 2)
    return emitOptionalError(loc, "gemm operands must be matrices, got ",
                             shapeToString(a), " and ", shapeToString(b));
  int64_t m = transA ? a[1] : a[0], k = transA ? a[0] : a[1];
  int64_t k2 = transB ? b[1] : b[0], n = transB ? b[0] : b[1];
  if (k != k2)
    return emitOptionalError(loc, "gemm contraction dimensions differ: ", k,
                             " vs ", k2);
  result = {m, n};
  if (c && !isBroadcastableTo(*c, result))
    return emitOptionalError(loc, "gemm bias of shape ", shapeToString(*c),
                             " does not broadcast to ", shapeToString(result));
  return success();
}

LogicalResult mlir::memfit::inferTransposeShape(ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> perm,
                                                Shape &result, OptLoc loc) {
  if (perm.size() != shape.size())
    return emitOptionalError(loc, "transpose permutation has ", perm.size(),
                             " entries for rank ", shape.size());
  SmallVector<bool> seen(shape.size(), false);
  result.clear();
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(shape.size()) || seen[p])
      return emitOptionalError(loc, "transpose perm is not a permutation of [0, ",
                               shape.size(), ")");
    seen[p] = true;
    result.push_back(shape[p]);
  }
  return success();
}

/// Normalizes a list of axes, rejecting duplicates.
static LogicalResult normalizeAxes(ArrayRef<int64_t> axes, int64_t rank,
                                   SmallVectorImpl<int64_t> &out, OptLoc loc) {
  out.clear();
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = normalizeAxis(axis, rank, loc);
    if (failed(a))
      return failure();
    if (llvm::is_contained(out, *a))
      return emitOptionalError(loc, "axis ", axis, " is repeated");
    out.push_back(*a);
  }
  return success();
}

LogicalResult mlir::memfit::inferReduceShape(ArrayRef<int64_t> shape,
                                             ArrayRef<int64_t> axes,
                                             bool keepDims, Shape &result,
                                             OptLoc loc) {
  SmallVector<int64_t> norm;
  if (failed(normalizeAxes(axes, shape.size(), norm, loc)))
    return failure();
  result.clear();
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool reduced = norm.empty() || llvm::is_contained(norm, (int64_t)i);
    if (!reduced)
      result.push_back(d);
    else if (keepDims)
      result.push_back(1);
  }
  return success();
}

LogicalResult mlir::memfit::inferFlattenShape(ArrayRef<int64_t> shape,
                                              int64_t axis, Shape &result,
                                              OptLoc loc) {
  int64_t rank = shape.size();
  if (axis < -rank || axis > rank)
    return emitOptionalError(loc, "flatten axis ", axis,
                             " is out of range for rank ", rank);
  if (axis < 0)
    axis += rank;
  result = {getNumElements(shape.take_front(axis)),
            getNumElements(shape.drop_front(axis))};
  return success();
}

LogicalResult mlir::memfit::inferSqueezeShape(ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> axes,
                                              Shape &result, OptLoc loc) {
  SmallVector<int64_t> norm;
  if (failed(normalizeAxes(axes, shape.size(), norm, loc)))
    return failure();
  for (int64_t a : norm)
    if (shape[a] != 1)
      return emitOptionalError(loc, "cannot squeeze dimension ", a,
                               " of size ", shape[a], " in shape ",
                               shapeToString(shape));
  result.clear();
  for (auto [i, d] : llvm::enumerate(shape)) {
    bool removed =
        norm.empty() ? d == 1 : llvm::is_contained(norm, (int64_t)i);
    if (!removed)
      result.push_back(d);
  }
  return success();
}

LogicalResult mlir::memfit::inferUnsqueezeShape(ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> axes,
                                                Shape &result, OptLoc loc) {
  if (axes.empty())
    return emitOptionalError(loc, "unsqueeze needs at least one axis");
  int64_t outRank = shape.size() + axes.size();
  SmallVector<int64_t> norm;
  if (failed(normalizeAxes(axes, outRank, norm, loc)))
    return failure();
  result.clear();
  auto it = shape.begin();
  for (int64_t i = 0; i < outRank; ++i)
    result.push_back(llvm::is_contained(norm, i) ? 1 : *it++);
  return success();
}

LogicalResult mlir::memfit::inferConcatShape(ArrayRef<ArrayRef<int64_t>> shapes,
                                             int64_t axis, Shape &result,
                                             OptLoc loc) {
  if (shapes.empty())
    return emitOptionalError(loc, "concat needs at least one input");
  int64_t rank = shapes.front().size();
  FailureOr<int64_t> a = normalizeAxis(axis, rank, loc);
  if (failed(a))
    return failure();
  result.assign(shapes.front().begin(), shapes.front().end());
  result[*a] = 0;
  for (auto [n, s] : llvm::enumerate(shapes)) {
    if (static_cast<int64_t>(s.size()) != rank)
      return emitOptionalError(loc, "concat input ", n, " has rank ", s.size(),
                               ", expected ", rank);
    for (int64_t i = 0; i < rank; ++i) {
      if (i == *a)
        continue;
      if (s[i] != result[i])
        return emitOptionalError(loc, "concat input ", n, " of shape ",
                                 shapeToString(s), " differs in dimension ", i,
                                 " from ", shapeToString(shapes.front()));
    }
    result[*a] += s[*a];
  }
  return success();
}

LogicalResult mlir::memfit::inferSplitShapes(ArrayRef<int64_t> shape,
                                             int64_t axis,
                                             ArrayRef<int64_t> sizes,
                                             SmallVectorImpl<Shape> &results,
                                             OptLoc loc) {
  FailureOr<int64_t> a = normalizeAxis(axis, shape.size(), loc);
  if (failed(a))
    return failure();
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return emitOptionalError(loc, "split size ", s, " is negative");
    if (s > shape[*a] - total)
      return emitOptionalError(loc, "split sizes exceed dimension ", *a,
                               " of ", shapeToString(shape), " (",
                               shape[*a], ")");
    total += s;
  }
  if (total != shape[*a])
    return emitOptionalError(loc, "split sizes add up to ", total,
                             " but dimension ", *a, " of ",
                             shapeToString(shape), " is ", shape[*a]);
  results.clear();
  for (int64_t s : sizes) {
    Shape r(shape);
    r[*a] = s;
    results.push_back(std::move(r));
  }
  return success();
}

LogicalResult mlir::memfit::resolveSlice(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> starts,
                                         ArrayRef<int64_t> ends,
                                         ArrayRef<int64_t> axes,
                                         ArrayRef<int64_t> steps,
                                         SmallVectorImpl<SliceDim> &dims,
                                         OptLoc loc) {
  if (starts.size() != ends.size() || starts.size() != axes.size() ||
      starts.size() != steps.size())
    return emitOptionalError(loc, "slice starts, ends, axes and steps have ",
                             starts.size(), ", ", ends.size(), ", ",
                             axes.size(), " and ", steps.size(),
                             " entries; they must agree");
  SmallVector<int64_t> norm;
  if (failed(normalizeAxes(axes, shape.size(), norm, loc)))
    return failure();
  dims.clear();
  for (int64_t d : shape)
    dims.push_back({0, 1, d});
  for (auto [i, axis] : llvm::enumerate(norm)) {
    int64_t dim = shape[axis], step = steps[i];
    if (step == 0)
      return emitOptionalError(loc, "slice step for axis ", axis, " is zero");
    int64_t start = starts[i], end = ends[i];
    // ONNX clamping: starts and ends are shifted by dim when negative, then
    // clamped to [0, dim] for positive steps and [-1, dim-1] for negative.
    if (start < 0)
      start = start < std::numeric_limits<int64_t>::min() + dim ? -1 : start + dim;
    if (end < 0)
      end = end < std::numeric_limits<int64_t>::min() + dim ? -1 : end + dim;
    // Sizes in 128 bits: steps may be as large as INT64_MAX (or as small
    // as INT64_MIN), which would overflow the ceiling division.
    __int128 size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? ((__int128)end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      __int128 s = -(__int128)step;
      size = start > end ? ((__int128)start - end + s - 1) / s : 0;
    }
    dims[axis] = {start, step, static_cast<int64_t>(size)};
  }
  return success();
}

LogicalResult mlir::memfit::inferGatherShape(ArrayRef<int64_t> data,
                                             ArrayRef<int64_t> indices,
                                             int64_t axis, Shape &result,
                                             OptLoc loc) {
  if (data.empty())
    return emitOptionalError(loc, "gather data must have rank >= 1");
  FailureOr<int64_t> a = normalizeAxis(axis, data.size(), loc);
  if (failed(a))
    return failure();
  result.assign(data.begin(), data.begin() + *a);
  result.append(indices.begin(), indices.end());
  result.append(data.begin() + *a + 1, data.end());
  return success();
}

LogicalResult mlir::memfit::inferGatherElementsShape(ArrayRef<int64_t> data,
                                                     ArrayRef<int64_t> indices,
                                                     int64_t axis,
                                                     Shape &result,
                                                     OptLoc loc) {
  if (data.empty() || data.size() != indices.size())
    return emitOptionalError(loc,
                             "gather_elements needs indices of the "
                             "data's rank (>= 1), got ",
                             shapeToString(indices), " for data ",
                             shapeToString(data));
  FailureOr<int64_t> a = normalizeAxis(axis, data.size(), loc);
  if (failed(a))
    return failure();
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != *a && indices[d] > data[d])
      return emitOptionalError(
          loc, "gather_elements indices ", shapeToString(indices),
          " are longer than the data ", shapeToString(data), " along axis ", d);
  result.assign(indices.begin(), indices.end());
  return success();
}

LogicalResult mlir::memfit::inferGatherNDShape(ArrayRef<int64_t> data,
                                               ArrayRef<int64_t> indices,
                                               int64_t batchDims, Shape &result,
                                               OptLoc loc) {
  int64_t r = data.size(), q = indices.size();
  if (r < 1 || q < 1)
    return emitOptionalError(loc, "gather_nd needs data and indices of rank "
                                  ">= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return emitOptionalError(loc, "gather_nd batch_dims ", batchDims,
                             " must be in [0, ", std::min(r, q), ")");
  for (int64_t d = 0; d < batchDims; ++d)
    if (data[d] != indices[d])
      return emitOptionalError(loc, "gather_nd batch dimension ", d,
                               " differs: data ", shapeToString(data),
                               ", indices ", shapeToString(indices));
  int64_t k = indices.back();
  if (k < 1 || k > r - batchDims)
    return emitOptionalError(loc, "gather_nd index tuples of ", k,
                             " entries for data ", shapeToString(data),
                             " with batch_dims ", batchDims);
  result.assign(indices.begin(), indices.end() - 1);
  result.append(data.begin() + batchDims + k, data.end());
  return success();
}

static LogicalResult checkReduction(StringRef op, StringRef reduction,
                                    OptLoc loc) {
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return emitOptionalError(loc, op,
                             " reduction must be none, add, mul, "
                             "max or min, got '",
                             reduction, "'");
  return success();
}

LogicalResult mlir::memfit::inferScatterElementsShape(
    ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
    ArrayRef<int64_t> updates, int64_t axis, StringRef reduction, Shape &result,
    OptLoc loc) {
  if (failed(checkReduction("scatter_elements", reduction, loc)))
    return failure();
  if (indices != updates)
    return emitOptionalError(loc,
                             "scatter_elements needs updates of the "
                             "indices' shape, got ",
                             shapeToString(updates), " for indices ",
                             shapeToString(indices));
  // The same rules as gather_elements' indices.
  Shape unused;
  if (failed(inferGatherElementsShape(data, indices, axis, unused, loc)))
    return failure();
  result.assign(data.begin(), data.end());
  return success();
}

LogicalResult mlir::memfit::inferScatterNDShape(ArrayRef<int64_t> data,
                                                ArrayRef<int64_t> indices,
                                                ArrayRef<int64_t> updates,
                                                StringRef reduction,
                                                Shape &result, OptLoc loc) {
  if (failed(checkReduction("scatter_nd", reduction, loc)))
    return failure();
  // The updates have the shape gather_nd would give (batch_dims 0).
  Shape expected;
  if (failed(inferGatherNDShape(data, indices, 0, expected, loc)))
    return failure();
  if (ArrayRef<int64_t>(expected) != updates)
    return emitOptionalError(
        loc, "scatter_nd needs updates of shape ", shapeToString(expected),
        " for data ", shapeToString(data), " and indices ",
        shapeToString(indices), ", got ", shapeToString(updates));
  result.assign(data.begin(), data.end());
  return success();
}

LogicalResult mlir::memfit::inferTopKShape(ArrayRef<int64_t> input,
                                           int64_t axis, int64_t k,
                                           Shape &result, OptLoc loc) {
  if (input.empty())
    return emitOptionalError(loc, "topk needs an input of rank >= 1");
  FailureOr<int64_t> a = normalizeAxis(axis, input.size(), loc);
  if (failed(a))
    return failure();
  if (k < 0 || k > input[*a])
    return emitOptionalError(loc, "topk k = ", k, " is outside [0, ", input[*a],
                             "], the length of axis ", *a);
  result.assign(input.begin(), input.end());
  result[*a] = k;
  return success();
}

LogicalResult mlir::memfit::inferReshapeShape(ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> target,
                                              bool allowZero, Shape &result,
                                              OptLoc loc) {
  result.clear();
  int64_t inferred = -1, known = 1;
  for (auto [i, dim] : llvm::enumerate(target)) {
    int64_t d = dim;
    if (d == -1) {
      if (inferred >= 0)
        return emitOptionalError(loc, "reshape target ", shapeToString(target),
                                 " has more than one -1");
      inferred = i;
      result.push_back(1);
      continue;
    }
    if (d == 0 && !allowZero) {
      if (i >= shape.size())
        return emitOptionalError(loc, "reshape target ", shapeToString(target),
                                 " copies dimension ", i, " of a rank-",
                                 shape.size(), " input");
      d = shape[i];
    } else if (d < 0) {
      return emitOptionalError(loc, "reshape target ", shapeToString(target),
                               " has a negative dimension");
    }
    result.push_back(d);
    if (llvm::MulOverflow(known, d, known))
      return emitOptionalError(loc, "reshape target ", shapeToString(target),
                               " has more elements than 64-bit sizes can "
                               "count");
  }
  int64_t total = getNumElements(shape);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return emitOptionalError(loc, "cannot reshape ", shapeToString(shape),
                               " to ", shapeToString(target), ": ", total,
                               " elements do not divide by ", known);
    result[inferred] = total / known;
  } else if (known != total) {
    return emitOptionalError(loc, "cannot reshape ", shapeToString(shape),
                             " (", total, " elements) to ",
                             shapeToString(result), " (", known, " elements)");
  }
  return success();
}

LogicalResult mlir::memfit::inferLossShape(
    ArrayRef<int64_t> scores, ArrayRef<int64_t> labels,
    std::optional<ArrayRef<int64_t>> weights, bool reduced, Shape &result,
    OptLoc loc) {
  if (scores.size() < 2)
    return emitOptionalError(loc, "loss scores must be [N, C, ...], got ",
                             shapeToString(scores));
  Shape expected{scores[0]};
  expected.append(scores.begin() + 2, scores.end());
  if (ArrayRef<int64_t>(expected) != labels)
    return emitOptionalError(loc, "loss labels of shape ",
                             shapeToString(labels), " do not match scores ",
                             shapeToString(scores), " (expected ",
                             shapeToString(expected), ")");
  if (weights && (weights->size() != 1 || (*weights)[0] != scores[1]))
    return emitOptionalError(loc, "loss weights of shape ",
                             shapeToString(*weights), " must be [",
                             scores[1], "]");
  if (reduced)
    result.clear();
  else
    result = expected;
  return success();
}

LogicalResult mlir::memfit::inferAttentionShapes(
    ArrayRef<int64_t> query, ArrayRef<int64_t> key, ArrayRef<int64_t> value,
    std::optional<ArrayRef<int64_t>> mask, Shape &result, Shape &logsumexp,
    OptLoc loc) {
  if (query.size() != 4 || key.size() != 4 || value.size() != 4)
    return emitOptionalError(
        loc, "attention takes query, key and value of rank 4 ([batch, heads, "
             "seq, head size]), got ",
        shapeToString(query), ", ", shapeToString(key), " and ",
        shapeToString(value));
  if (key[0] != query[0] || value[0] != query[0] || value[1] != key[1] ||
      value[2] != key[2] || key[3] != query[3])
    return emitOptionalError(
        loc, "attention key ", shapeToString(key), " and value ",
        shapeToString(value), " do not match query ", shapeToString(query),
        " (batch, heads and keys alike; query and key head sizes equal)");
  if (key[1] == 0 || query[1] % key[1] != 0)
    return emitOptionalError(loc, "attention query heads (", query[1],
                             ") must be a multiple of key heads (", key[1],
                             ")");
  if (mask) {
    Shape scores{query[0], query[1], query[2], key[2]};
    if (!isBroadcastableTo(*mask, scores))
      return emitOptionalError(loc, "attention mask of shape ",
                               shapeToString(*mask), " does not broadcast to ",
                               shapeToString(scores));
  }
  result = {query[0], query[1], query[2], value[3]};
  logsumexp = {query[0], query[1], query[2]};
  return success();
}

LogicalResult mlir::memfit::verifyNormParam(ArrayRef<int64_t> shape,
                                            int64_t axis,
                                            ArrayRef<int64_t> param,
                                            StringRef name, OptLoc loc) {
  FailureOr<int64_t> a = normalizeAxis(axis, shape.size(), loc);
  if (failed(a))
    return failure();
  ArrayRef<int64_t> normalized = shape.drop_front(*a);
  if (!isBroadcastableTo(param, normalized))
    return emitOptionalError(loc, name, " of shape ", shapeToString(param),
                             " does not broadcast to the normalized shape ",
                             shapeToString(normalized));
  return success();
}
