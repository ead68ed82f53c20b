//===- CudaContraction.cpp - contractions through cuBLASLt ----------------===//
//
// The CUDA backend's contractions: each manifest contraction is one
// cublasLtMatmul (or one per index of its looped batch dimensions) with a
// plan per shape (descriptors, layouts and the heuristic's algorithm),
// created at the first run and reused by the later ones.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace memfit::rt::cuda {

StatusOr<ElementType> elementType(const Contraction &contraction, bool tf32) {
  switch (contraction.dtype) {
  case DType::f32:
    return ElementType{CUDA_R_32F,
                       tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                       CUDA_R_32F, 4};
  case DType::f16:
    return ElementType{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2};
  case DType::bf16:
    return ElementType{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2};
  case DType::f64:
    return ElementType{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, 8};
  default:
    return invalidArgument("contraction '" + contraction.name + "': dtype " +
                           dtypeName(contraction.dtype) +
                           " is not supported on CUDA (cuBLASLt contractions "
                           "take f32, f16, bf16 or f64)");
  }
}

uint64_t blasWorkspaceBytes(const Manifest &manifest, int major) {
  const uint64_t cap = major >= 9 ? 32ull << 20 : 4ull << 20;
  uint64_t need = 0;
  for (const Contraction &c : manifest.contractions) {
    uint64_t outputs = uint64_t(std::max<int64_t>(c.m, 0)) *
                       uint64_t(std::max<int64_t>(c.n, 0));
    for (int64_t d : c.batchShape)
      outputs *= uint64_t(std::max<int64_t>(d, 0));
    need = std::max(need, outputs * 4);
  }
  return (std::min(need, cap) + 255) / 256 * 256;
}

namespace {
/// The single stride of an operand over batch dimensions [first, rank):
/// dimensions of extent 1 do not matter, and every other dimension i must
/// have stride s * product(shape[i+1:]) for the s of the innermost one.
std::optional<int64_t> flatStride(const std::vector<int64_t> &shape,
                                  const std::vector<int64_t> &strides,
                                  size_t first) {
  std::optional<int64_t> stride;
  int64_t extent = 1;
  for (size_t i = shape.size(); i-- > first;) {
    if (shape[i] == 1)
      continue;
    if (!stride)
      stride = strides[i]; // extent is 1: every inner dimension has extent 1
    else if (strides[i] != *stride * extent)
      return std::nullopt;
    extent *= shape[i];
  }
  return stride.value_or(0);
}

/// Whether `count` output matrices `stride` elements apart share no
/// element: stacked (each past the previous one's last row) or interleaved
/// (side by side within each row of ld elements).
bool disjointOutputs(const Contraction &contraction, int64_t count,
                     int64_t stride) {
  const int64_t m = contraction.m, n = contraction.n, ld = contraction.ld[2];
  if (stride >= (m - 1) * ld + n)
    return true;
  return m == 1 || (stride >= n && (count - 1) * stride + n <= ld);
}

BatchPlan planBatch(const Contraction &contraction) {
  const std::vector<int64_t> &shape = contraction.batchShape;
  BatchPlan plan;
  for (size_t first = 0; first <= shape.size(); ++first) {
    int64_t inner = 1;
    for (size_t i = first; i < shape.size(); ++i)
      inner *= shape[i];
    if (inner > INT32_MAX) // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT is int32_t
      continue;
    std::optional<int64_t> strides[3];
    for (int o = 0; o < 3; ++o)
      strides[o] = flatStride(
          shape, contraction.batchStrides(Contraction::Operand(o)), first);
    if (!strides[0] || !strides[1] || !strides[2])
      continue;
    // The output matrices of one strided batch must not share elements:
    // each one after the previous ([m rows of ld]), or side by side within
    // the rows (attention heads written merged: each head's n columns, the
    // heads n or more apart, all of them within a row of ld).
    if (inner > 1 && !disjointOutputs(contraction, inner, *strides[2]))
      continue;
    plan.outerRank = first;
    plan.innerCount = inner;
    for (int o = 0; o < 3; ++o)
      plan.strides[o] = inner > 1 ? *strides[o] : 0;
    break;
  }
  for (size_t i = 0; i < plan.outerRank; ++i)
    plan.outerCount *= shape[i];
  return plan;
}

/// The largest power of two, at most 256, that divides every value:
/// the alignment cuBLASLt may assume of a matrix's addresses.
uint32_t commonAlignment(const std::vector<uint64_t> &values) {
  uint64_t bits = 256;
  for (uint64_t value : values)
    bits |= value;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// The bias (or bias gradient) vector's pointer and, for GELU_AUX_BIAS,
/// the aux matrix's, on `desc`: at the plan's creation for the heuristic
/// (which reads them for their alignment), and at each call.
Status setEpiloguePointers(const BlasLtSymbols &lt, cublasLtMatmulDesc_t desc,
                           const PlanAlignment &alignment) {
  const std::pair<int, CUdeviceptr> pointers[] = {
      {CUBLASLT_MATMUL_DESC_BIAS_POINTER, alignment.vector},
      {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, alignment.aux}};
  for (const auto &[attribute, value] : pointers) {
    if (!value)
      continue;
    const void *pointer = reinterpret_cast<const void *>(value);
    MEMFIT_RT_RETURN_IF_ERROR(
        lt.check(lt.cublasLtMatmulDescSetAttribute(desc, attribute, &pointer,
                                                   sizeof pointer),
                 "cublasLtMatmulDescSetAttribute"));
  }
  return Status::ok();
}

void destroyPlan(const BlasLtSymbols &lt, MatmulPlan &plan) {
  if (plan.first)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.first);
  if (plan.second)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.second);
  if (plan.out)
    (void)lt.cublasLtMatrixLayoutDestroy(plan.out);
  if (plan.desc)
    (void)lt.cublasLtMatmulDescDestroy(plan.desc);
  plan = MatmulPlan();
}

} // namespace

void CudaBackend::destroyPlans() {
  if (!lt_)
    return;
  for (auto &entry : plans_)
    destroyPlan(*lt_, entry.second);
  plans_.clear();
}

Status CudaBackend::initBlasLt() {
  if (blasLt_)
    return Status::ok();
  StatusOr<const BlasLtSymbols *> lt = loadBlasLt();
  if (!lt)
    return lt.status().withContext("contractions need cuBLASLt");
  lt_ = *lt;
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  return lt_->check(lt_->cublasLtCreate(&blasLt_), "cublasLtCreate")
      .withContext("cuBLASLt " + lt_->path + " on " + deviceName() +
                   ", driver " + formatCudaVersion(driverVersion_));
}

// cuBLASLt is column-major and memfit's matrices are row-major. A row-major
// [r, c] matrix is the column-major [c, r] matrix with the same bytes, its
// transpose, so out = op(A) x op(B) is computed as
//
//   out^T = op(B)^T x op(A)^T        (column-major, n x m, ld n)
//
// with cuBLASLt's first operand on B's buffer and its second on A's:
//   first:  B is [k, n] (row-major) -> column-major [n, k], ld n, op N
//           B is [n, k] (transB)    -> column-major [k, n], ld k, op T
//   second: A is [m, k]             -> column-major [k, m], ld k, op N
//           A is [k, m] (transA)    -> column-major [m, k], ld m, op T
// Row-major layouts (CUBLASLT_ORDER_ROW) would say the same, but fewer
// cuBLASLt kernels support them.
StatusOr<MatmulPlan>
CudaBackend::createPlan(const Contraction &contraction, const ElementType &type,
                        const BatchPlan &batch, const PlanAlignment &alignment,
                        const CachedAlgo *cached) {
  const BlasLtSymbols &lt = *lt_;
  const int64_t m = contraction.m, n = contraction.n, k = contraction.k;
  MatmulPlan plan;
  cublasLtMatmulPreference_t preference = nullptr;
  // Frees what was created when a step fails.
  auto fail = [&](Status status) -> StatusOr<MatmulPlan> {
    destroyPlan(lt, plan);
    if (preference)
      (void)lt.cublasLtMatmulPreferenceDestroy(preference);
    return status.withContext("contraction '" + contraction.name + "'");
  };
#define MEMFIT_PLAN_CHECK(fn, ...)                                             \
  do {                                                                         \
    Status status_ = lt.check(lt.fn(__VA_ARGS__), #fn);                        \
    if (!status_.isOk())                                                       \
      return fail(status_);                                                    \
  } while (false)

  const int32_t opFirst = contraction.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t opSecond = contraction.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescCreate, &plan.desc, type.compute,
                    type.scale);
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                    CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof opFirst);
  MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                    CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof opSecond);
  // The epilogue, in cuBLASLt's operands: its first operand is B, so the
  // sums of op(B) (n, the rows of the column-major out) are BGRADA and
  // those of op(A) (m, its columns) BGRADB; the bias has out's n rows. The
  // heuristic reads the vector's pointer for its alignment.
  if (alignment.vector) {
    const uint32_t epilogue =
        contraction.epilogue == Epilogue::Bias ? CUBLASLT_EPILOGUE_BIAS
        : contraction.epilogue == Epilogue::GeluAuxBias
            ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
        : contraction.epilogue == Epilogue::BiasGradB ? CUBLASLT_EPILOGUE_BGRADA
                                                      : CUBLASLT_EPILOGUE_BGRADB;
    MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                      CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                      sizeof epilogue);
    // GELU's input, memfit's out (column-major n x m, ld n), beside the
    // GELU the matmul writes as D.
    if (alignment.aux) {
      const int64_t auxLd = contraction.ld[2];
      MEMFIT_PLAN_CHECK(cublasLtMatmulDescSetAttribute, plan.desc,
                        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd,
                        sizeof auxLd);
    }
    if (Status status = setEpiloguePointers(lt, plan.desc, alignment);
        !status.isOk())
      return fail(status);
  }

  // A row-major matrix's rows are ld apart: its column-major transpose's
  // columns are.
  const int64_t ldA = contraction.ld[0], ldB = contraction.ld[1],
                ldOut = contraction.ld[2];
  const bool tA = contraction.transA, tB = contraction.transB;
  MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.first, type.data,
                    tB ? k : n, tB ? n : k, ldB);
  MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.second, type.data,
                    tA ? m : k, tA ? k : m, ldA);
  MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutCreate, &plan.out, type.data, n, m,
                    ldOut);

  if (batch.innerCount > 1) {
    const int32_t count = static_cast<int32_t>(batch.innerCount);
    const int64_t strides[3] = {batch.strides[1], batch.strides[0],
                                batch.strides[2]};
    cublasLtMatrixLayout_t layouts[3] = {plan.first, plan.second, plan.out};
    for (int i = 0; i < 3; ++i) {
      MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutSetAttribute, layouts[i],
                        CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                        sizeof count);
      MEMFIT_PLAN_CHECK(cublasLtMatrixLayoutSetAttribute, layouts[i],
                        CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                        &strides[i], sizeof strides[i]);
    }
  }

  // An earlier session's choice for this key (CudaAlgoCache.cpp).
  if (cached) {
    if (!cached->usable) {
      destroyPlan(lt, plan);
      plan.usable = false;
      return plan;
    }
    plan.algo = cached->algo;
    plan.workspace = cached->workspace;
    return plan;
  }

  // The workspace at the end of the one allocation (workspaceBytes): the
  // heuristic may pick split-K and stream-K kernels that use up to that
  // much. The alignments let it exclude kernels that need more than the
  // operands' addresses have (the default assumes 256 bytes).
  const uint64_t workspace = workspaceSize_;
  MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceCreate, &preference);
  MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceSetAttribute, preference,
                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                    sizeof workspace);
  const std::pair<int, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment.first},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment.second},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment.out},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment.out}};
  for (const auto &[attribute, bytes] : alignments)
    MEMFIT_PLAN_CHECK(cublasLtMatmulPreferenceSetAttribute, preference,
                      attribute, &bytes, sizeof bytes);

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  MEMFIT_PLAN_CHECK(cublasLtMatmulAlgoGetHeuristic, blasLt_, plan.desc,
                    plan.first, plan.second, plan.out, plan.out, preference, 1,
                    &result, &found);
#undef MEMFIT_PLAN_CHECK
  (void)lt.cublasLtMatmulPreferenceDestroy(preference);
  preference = nullptr;
  if (alignment.vector && (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)) {
    // No algorithm with the epilogue: the plan stays, marked, so that the
    // heuristic is not asked again and the session runs the fallback.
    destroyPlan(lt, plan);
    plan.usable = false;
    return plan;
  }
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return fail(internalError(
        std::string("cuBLASLt has no algorithm for ") +
        dtypeName(contraction.dtype) + " m=" + std::to_string(m) +
        " n=" + std::to_string(n) + " k=" + std::to_string(k) +
        (contraction.transA ? " transA" : "") +
        (contraction.transB ? " transB" : "") +
        " batch=" + std::to_string(batch.innerCount) +
        (workspace ? " with " + std::to_string(workspace) +
                         " bytes of workspace"
                   : std::string(" without workspace"))));
  plan.algo = result.algo;
  plan.workspace = result.workspaceSize;
  return plan;
}

StatusOr<MatmulPlan *>
CudaBackend::getPlan(const Contraction &contraction, const ElementType &type,
                     const BatchPlan &batch, const PlanAlignment &alignment) {
  const int64_t epilogue =
      alignment.vector ? int64_t(contraction.epilogue) : 0;
  const int64_t vectorAlignment =
      alignment.vector ? int64_t(commonAlignment({alignment.vector})) : 0;
  const int64_t auxAlignment =
      alignment.aux ? int64_t(commonAlignment({alignment.aux})) : 0;
  std::string key;
  for (int64_t value :
       {int64_t(contraction.dtype), contraction.m, contraction.n, contraction.k,
        int64_t(contraction.transA), int64_t(contraction.transB),
        contraction.ld[0], contraction.ld[1], contraction.ld[2],
        batch.innerCount, batch.strides[0], batch.strides[1], batch.strides[2],
        int64_t(alignment.first), int64_t(alignment.second),
        int64_t(alignment.out), epilogue, vectorAlignment, auxAlignment,
        int64_t(workspaceSize_), int64_t(tf32_)})
    key += std::to_string(value) + ",";
  auto it = plans_.find(key);
  if (it != plans_.end())
    return &it->second;
  auto cached = cachedAlgos_.find(key);
  StatusOr<MatmulPlan> plan = createPlan(
      contraction, type, batch, alignment,
      cached == cachedAlgos_.end() ? nullptr : &cached->second);
  if (!plan)
    return plan.status();
  if (cached == cachedAlgos_.end())
    rememberAlgo(key, *plan);
  if (!plan->usable && warn_)
    warn_("contraction '" + contraction.name + "': cuBLASLt has no algorithm "
          "for its " + epilogueName(contraction.epilogue) +
          " epilogue (" + dtypeName(contraction.dtype) + " m=" +
          std::to_string(contraction.m) + " n=" + std::to_string(contraction.n) +
          " k=" + std::to_string(contraction.k) +
          "); its fallback kernel runs before the product instead");
  return &plans_.emplace(key, *plan).first->second;
}

Status CudaBackend::runContraction(const Contraction &contraction, uint64_t a,
                                   uint64_t b, uint64_t out) {
  StatusOr<bool> ran = contract(contraction, a, b, out, std::nullopt);
  return ran ? Status::ok() : ran.status();
}

StatusOr<bool>
CudaBackend::runContractionEpilogue(const Contraction &contraction,
                                    const std::vector<uint64_t> &offsets) {
  const bool gelu = contraction.epilogue == Epilogue::GeluAuxBias;
  if (contraction.epilogue == Epilogue::None)
    return invalidArgument("contraction '" + contraction.name +
                           "' has no epilogue");
  if (offsets.size() != (gelu ? 5u : 4u))
    return invalidArgument("contraction '" + contraction.name + "': " +
                           std::to_string(offsets.size()) +
                           " buffers for its " +
                           epilogueName(contraction.epilogue) + " epilogue");
  return contract(contraction, offsets[0], offsets[1], offsets[2], offsets[3],
                  gelu ? std::optional<uint64_t>(offsets[4]) : std::nullopt);
}

StatusOr<bool> CudaBackend::contract(const Contraction &contraction,
                                     uint64_t a, uint64_t b, uint64_t out,
                                     std::optional<uint64_t> vector,
                                     std::optional<uint64_t> activated) {
  const std::string context = "contraction '" + contraction.name + "'";
  StatusOr<ElementType> typeOr = elementType(contraction, tf32_);
  if (!typeOr)
    return typeOr.status();
  const ElementType type = *typeOr;
  const std::vector<int64_t> &shape = contraction.batchShape;
  if (contraction.batchStridesA.size() != shape.size() ||
      contraction.batchStridesB.size() != shape.size() ||
      contraction.batchStridesOut.size() != shape.size())
    return invalidArgument(context +
                           ": batch strides do not match the batch rank " +
                           std::to_string(shape.size()));
  const int64_t m = contraction.m, n = contraction.n, k = contraction.k;
  if (m < 0 || n < 0 || k < 0)
    return invalidArgument(context + ": negative dimension");
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || contraction.batchStridesA[i] < 0 ||
        contraction.batchStridesB[i] < 0 || contraction.batchStridesOut[i] < 0)
      return invalidArgument(context + ": negative batch size or stride");
    count *= shape[i];
  }
  for (int o = 0; o < 3; ++o)
    if (contraction.offsets[o] < 0 || contraction.ld[o] < 0)
      return invalidArgument(context + ": negative offset or leading "
                                       "dimension");
  // An epilogue over nothing, or over a batch, is the fallback's.
  if (vector && (count != 1 || m == 0 || n == 0 || k == 0))
    return false;
  if (count == 0 || m == 0 || n == 0)
    return true;
  const uint64_t e = type.bytes;
  if (k == 0) {
    // An empty sum: out = beta * out, on a packed output.
    Contraction packed = contraction;
    packed.setPackedLayout();
    if (packed.ld[2] != contraction.ld[2] || contraction.offsets[2] != 0 ||
        packed.batchStridesOut != contraction.batchStridesOut)
      return invalidArgument(context + ": k = 0 with a strided output");
    if (contraction.beta == 1.0f)
      return true;
    if (contraction.beta != 0.0f)
      return invalidArgument(context + ": k = 0 with beta other than 0 or 1");
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange("the output", out, uint64_t(count * m * n) * e)
            .withContext(context));
    MEMFIT_RT_RETURN_IF_ERROR(checkNotCapturing(
        context + ": clearing the output of an empty sum (k = 0)"));
    MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
    MEMFIT_RT_RETURN_IF_ERROR(synchronize()); // cuMemsetD8 is not on stream_
    MEMFIT_CU_RETURN_IF_ERROR(cu_, cuMemsetD8, address(out), 0,
                              uint64_t(count * m * n) * e);
    return true;
  }
  for (int o = 0; o < 3; ++o)
    if (contraction.ld[o] < std::max<int64_t>(1, contraction.storedColumns(
                                                     Contraction::Operand(o))))
      return invalidArgument(context + ": rows closer than their length");

  // The extent of each operand, so that no matrix reaches outside the
  // allocation whatever the manifest says.
  const char *roles[3] = {"operand A", "operand B", "the output"};
  const uint64_t starts[3] = {a, b, out};
  for (int o = 0; o < 3; ++o) {
    uint64_t span = operandSpan(contraction, Contraction::Operand(o)), bytes;
    if (__builtin_mul_overflow(span, e, &bytes))
      bytes = std::numeric_limits<uint64_t>::max();
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange(roles[o], starts[o], bytes).withContext(context));
  }
  if (vector)
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange((std::string("the ") + epilogueName(contraction.epilogue) +
                    " vector")
                       .c_str(),
                   *vector, uint64_t(contraction.epilogueLength()) * e)
            .withContext(context));
  if (activated)
    MEMFIT_RT_RETURN_IF_ERROR(
        checkRange("the gelu output", *activated, uint64_t(m * n) * e)
            .withContext(context));
  MEMFIT_RT_RETURN_IF_ERROR(makeCurrent());
  if (!blasLt_) // prepareKernels creates it when the manifest has contractions
    MEMFIT_RT_RETURN_IF_ERROR(initBlasLt());

  const BatchPlan batch = planBatch(contraction);
  // Every address cuBLASLt will see: the matrices' first elements, the
  // strides within the strided batch and the offsets of the looped
  // dimensions.
  std::vector<uint64_t> addresses[3];
  for (int o = 0; o < 3; ++o) {
    addresses[o].push_back(
        address(starts[o] + uint64_t(contraction.offsets[o]) * e));
    if (batch.innerCount > 1)
      addresses[o].push_back(uint64_t(batch.strides[o]) * e);
    for (size_t i = 0; i < batch.outerRank; ++i)
      addresses[o].push_back(
          uint64_t(contraction.batchStrides(Contraction::Operand(o))[i]) * e);
  }
  // GeluAuxBias: D is the GELU (packed), and out, GELU's input, the aux.
  const uint64_t written = activated ? *activated : out;
  if (activated)
    addresses[2] = {address(*activated)};
  PlanAlignment alignment;
  alignment.first = commonAlignment(addresses[1]);
  alignment.second = commonAlignment(addresses[0]);
  alignment.out = commonAlignment(addresses[2]);
  alignment.vector = vector ? address(*vector) : 0;
  alignment.aux = activated ? address(out) : 0;
  StatusOr<MatmulPlan *> planOr = getPlan(contraction, type, batch, alignment);
  if (!planOr)
    return planOr.status();
  const MatmulPlan &plan = **planOr;
  if (!plan.usable)
    return false;
  // The plan may have been made for other vectors of their alignments.
  MEMFIT_RT_RETURN_IF_ERROR(
      setEpiloguePointers(*lt_, plan.desc, alignment).withContext(context));

  const float alpha32 = contraction.alpha, beta32 = contraction.beta;
  const double alpha64 = contraction.alpha, beta64 = contraction.beta;
  const bool doubleScale = type.scale == CUDA_R_64F;
  const void *alpha =
      doubleScale ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = doubleScale ? static_cast<const void *>(&beta64) : &beta32;

  std::vector<int64_t> index(batch.outerRank, 0);
  for (int64_t outer = 0; outer < batch.outerCount; ++outer) {
    // The offsets of this outer index; the inner batch is strided.
    CUdeviceptr pointers[3];
    for (int o = 0; o < 3; ++o) {
      uint64_t offset = uint64_t(contraction.offsets[o]);
      for (size_t i = 0; i < batch.outerRank; ++i)
        offset += uint64_t(
            index[i] * contraction.batchStrides(Contraction::Operand(o))[i]);
      pointers[o] = address((o == 2 ? written : starts[o]) + offset * e);
    }
    const CUdeviceptr pointerA = pointers[0], pointerB = pointers[1],
                      pointerOut = pointers[2];
    MEMFIT_RT_RETURN_IF_ERROR(
        lt_->check(lt_->cublasLtMatmul(
                       blasLt_, plan.desc, alpha,
                       reinterpret_cast<void *>(pointerB), plan.first,
                       reinterpret_cast<void *>(pointerA), plan.second, beta,
                       reinterpret_cast<void *>(pointerOut), plan.out,
                       reinterpret_cast<void *>(pointerOut), plan.out,
                       &plan.algo,
                       plan.workspace ? reinterpret_cast<void *>(
                                            base_ + workspaceOffset_)
                                      : nullptr,
                       plan.workspace, stream_),
                   "cublasLtMatmul")
            .withContext(context));
    // The next outer multi-index, row-major.
    for (size_t i = batch.outerRank; i-- > 0;) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  return true;
}

} // namespace memfit::rt::cuda
