//===- FakeCublasLt.cpp - a FAKE libcublasLt.so.13 for testing ------------===//
//
// NOT cuBLASLt: a stand-in loaded only by memfit-cuda-mock-test (see
// MockCuda.h), so that the CUDA backend's mapping of row-major contractions
// onto cuBLASLt's column-major API is checked without a GPU. It computes,
// on the host and in the fake driver's device memory, what cuBLASLt
// documents for cublasLtMatmul:
//
//   D[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b]   for b < batch count
//
// with the epilogues memfit uses (CUBLASLT_EPILOGUE_BIAS: a vector of D's
// rows added to every column; GELU_AUX_BIAS: that sum stored in the aux
// matrix and its GELU, the tanh approximation, in D; BGRADA and BGRADB:
// op(A)'s or op(B)'s sums over k written to the vector, without a batch);
// where a matrix layout describes the matrix as stored, column-major
// (element (i, j) at i + j * ld, ld >= rows), op is the descriptor's
// CUBLASLT_MATMUL_DESC_TRANSA/TRANSB (N or T) applied to that stored
// matrix, matrix b of an operand starts CUBLASLT_MATRIX_LAYOUT_STRIDED_-
// BATCH_OFFSET elements after matrix b - 1 (0 broadcasts it), C is not read
// when beta is 0, alpha and beta are host values of the scale type, and
// f16/bf16 data is computed in fp32 (CUBLAS_COMPUTE_32F).
//
// It also enforces what the real library requires or promises: matching
// shapes, types and batch counts; a current context and a live stream; the
// operands inside live device allocations; an algorithm from the heuristic,
// with no more workspace than the preference allowed; and pointers aligned
// as promised by the preference's CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES
// (256 bytes when not set). Breaches are recorded as violations.
//
// What it does NOT prove: that real cuBLASLt accepts the same descriptors,
// has an algorithm for them without workspace, or matches these numbers
// bit for bit (it accumulates in double); only the attributes memfit sets
// are implemented.
//
//===----------------------------------------------------------------------===//

#include "MockCuda.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace {

using Status = int; // cublasStatus_t
constexpr Status kSuccess = 0;
constexpr Status kNotInitialized = 1;
constexpr Status kInvalidValue = 7;
constexpr Status kExecutionFailed = 13;
constexpr Status kNotSupported = 15;

// cudaDataType and cublasComputeType_t values.
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
constexpr int kCompute32F = 68, kCompute64F = 70, kCompute32FFastTF32 = 77;
// Attribute values.
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7,
              kDescBiasPointer = 8, kDescAuxPointer = 11, kDescAuxLd = 12;
// cublasLtEpilogue_t values emulated.
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4,
                   kEpilogueGeluAuxBias = 32 | 128 | 4, kEpilogueBgradA = 256,
                   kEpilogueBgradB = 512;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kPrefMinAlignmentA = 5; // then B, C, D: 6, 7, 8

/// Marks an algorithm the fake heuristic returned.
constexpr uint64_t kAlgoMagic = 0xfa4e'a190'0000'0001ull;

struct Handle {};
struct Desc {
  int compute = 0, scale = 0;
  int32_t trans[2] = {0, 0}; // A, B
  uint32_t epilogue = kEpilogueDefault;
  uint64_t biasPointer = 0, auxPointer = 0;
  int64_t auxLd = 0;
};
struct Layout {
  int type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; // A, B, C, D
};
// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t (cublasLt.h).
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

struct Failure {
  Status result = kSuccess;
  int times = 0;
};

struct State {
  std::map<std::string, Failure> failures;
  std::map<std::string, int> calls;
  bool noAlgorithm = false;
  bool noEpilogue = false;
  std::vector<mockcublaslt::Matmul> matmuls;
  std::set<Handle *> handles;
  std::set<Desc *> descs;
  std::set<Layout *> layouts;
  std::set<Preference *> preferences;
};

State &state() {
  static State s;
  return s;
}

Status enter(const char *entry) {
  State &s = state();
  ++s.calls[entry];
  auto it = s.failures.find(entry);
  if (it == s.failures.end())
    return kSuccess;
  Status result = it->second.result;
  if (it->second.times > 0 && --it->second.times == 0)
    s.failures.erase(it);
  return result;
}

#define FAKE_ENTER(entry)                                                      \
  do {                                                                         \
    if (Status injected_ = enter(entry); injected_ != kSuccess)                \
      return injected_;                                                        \
  } while (false)

Status violation(Status result, const char *entry, const std::string &what) {
  mockcuda::recordViolation(std::string(entry) + ": " + what);
  return result;
}

template <typename T> bool live(const std::set<T *> &objects, T *object) {
  return object && objects.count(object);
}

uint64_t elementBytes(int type) {
  switch (type) {
  case kR32F:
    return 4;
  case kR64F:
    return 8;
  case kR16F:
  case kR16BF:
    return 2;
  default:
    return 0;
  }
}

/// Why the problem is not a valid matmul ("" if it is): the rules of
/// cublasLtMatmul for the types and attributes memfit uses.
std::string checkProblem(const Desc &desc, const Layout &a, const Layout &b,
                         const Layout &c, const Layout &d) {
  if (a.type != b.type || a.type != c.type || a.type != d.type)
    return "A, B, C and D have different types";
  bool fp64 = a.type == kR64F;
  bool tf32 = desc.compute == kCompute32FFastTF32 && a.type == kR32F;
  if ((desc.compute != (fp64 ? kCompute64F : kCompute32F) && !tf32) ||
      desc.scale != (fp64 ? kR64F : kR32F))
    return "compute type " + std::to_string(desc.compute) + " and scale type " +
           std::to_string(desc.scale) + " do not fit data type " +
           std::to_string(a.type);
  uint64_t m = d.rows, n = d.cols;
  uint64_t am = desc.trans[0] ? a.cols : a.rows;
  uint64_t ak = desc.trans[0] ? a.rows : a.cols;
  uint64_t bk = desc.trans[1] ? b.cols : b.rows;
  uint64_t bn = desc.trans[1] ? b.rows : b.cols;
  if (am != m || bn != n || ak != bk)
    return "op(A) is " + std::to_string(am) + "x" + std::to_string(ak) +
           ", op(B) " + std::to_string(bk) + "x" + std::to_string(bn) + ", D " +
           std::to_string(m) + "x" + std::to_string(n);
  if (c.rows != m || c.cols != n)
    return "C and D have different shapes";
  if (a.batch != d.batch || b.batch != d.batch || c.batch != d.batch)
    return "the batch counts differ";
  if (desc.epilogue != kEpilogueDefault) {
    if (!desc.biasPointer)
      return "epilogue " + std::to_string(desc.epilogue) +
             " without CUBLASLT_MATMUL_DESC_BIAS_POINTER";
    if (d.batch > 1)
      return "an epilogue over a batch (the fake has no bias batch stride)";
    if (desc.epilogue == kEpilogueGeluAuxBias &&
        (!desc.auxPointer || desc.auxLd < int64_t(d.rows)))
      return "GELU_AUX_BIAS without CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER "
             "or with an AUX_LD below D's rows";
  }
  // Matrices of D that share elements: neither stacked (each past the
  // previous one's last column) nor side by side within the columns.
  const int64_t rows = int64_t(d.rows), cols = int64_t(d.cols);
  bool stacked = d.stride >= (cols - 1) * d.ld + rows;
  bool besides = d.stride >= rows && (d.batch - 1) * d.stride + rows <= d.ld;
  if (d.batch > 1 && !stacked && !besides && cols > 1)
    return "the matrices of D overlap (batch stride " +
           std::to_string(d.stride) + ")";
  return "";
}

// f16 and bf16 to and from float (round to nearest even; subnormal halves
// are handled, NaNs and infinities are not needed by the tests).
float halfToFloat(uint16_t h) {
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude = exponent == 0
                        ? std::ldexp(float(mantissa), -24)
                        : std::ldexp(float(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

uint16_t floatToHalf(float f) {
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a == 0.0f)
    return sign;
  int exponent;
  std::frexp(a, &exponent); // a = m * 2^exponent, m in [0.5, 1)
  // The unit in the last place: 2^(exponent - 11) for normals, 2^-24 below.
  int ulpExponent = exponent - 11 < -24 ? -24 : exponent - 11;
  float units = std::nearbyint(std::ldexp(a, -ulpExponent)); // ties to even
  uint32_t value = uint32_t(units);
  // Subnormal, unless it rounded up to the smallest normal.
  if (ulpExponent == -24 && value < 0x400)
    return sign | uint16_t(value);
  // value is in [1024, 2048]; 2048 carries into the exponent.
  int biased = ulpExponent + 25;
  if (value == 2048) {
    value = 1024;
    ++biased;
  }
  return sign | uint16_t(biased << 10) | uint16_t(value & 0x3ff);
}

float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

double load(int type, const unsigned char *p) {
  switch (type) {
  case kR32F: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case kR64F: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case kR16F:
  case kR16BF: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return type == kR16F ? halfToFloat(v) : bf16ToFloat(v);
  }
  }
  return 0;
}

void store(int type, unsigned char *p, double value) {
  switch (type) {
  case kR32F: {
    float v = float(value);
    std::memcpy(p, &v, 4);
    return;
  }
  case kR64F:
    std::memcpy(p, &value, 8);
    return;
  case kR16F:
  case kR16BF: {
    uint16_t v =
        type == kR16F ? floatToHalf(float(value)) : floatToBf16(float(value));
    std::memcpy(p, &v, 2);
    return;
  }
  }
}

/// Host memory of matrix `b` of a batch, all of it inside one allocation.
unsigned char *matrix(const void *pointer, const Layout &layout, int64_t b,
                      const char *name) {
  uint64_t e = elementBytes(layout.type);
  uint64_t address =
      reinterpret_cast<uint64_t>(pointer) + uint64_t(b * layout.stride) * e;
  uint64_t span = ((layout.cols - 1) * uint64_t(layout.ld) + layout.rows) * e;
  std::string who = std::string("cublasLtMatmul operand ") + name + " (batch " +
                    std::to_string(b) + ")";
  return static_cast<unsigned char *>(
      mockcuda::hostRange(address, span, who.c_str()));
}

mockcublaslt::Operand operand(const void *pointer, const Layout &layout) {
  return {reinterpret_cast<uint64_t>(pointer), layout.rows, layout.cols,
          layout.ld, layout.batch > 1 ? layout.stride : 0};
}

} // namespace

//===----------------------------------------------------------------------===//
// Test controls (MockCuda.h)
//===----------------------------------------------------------------------===//

namespace mockcublaslt {

void reset() {
  State &s = state();
  s.failures.clear();
  s.calls.clear();
  s.noAlgorithm = false;
  s.noEpilogue = false;
  s.matmuls.clear();
}

void failNext(const std::string &entryPoint, int result, int times) {
  state().failures[entryPoint] = Failure{result, times};
}

int calls(const std::string &entryPoint) {
  auto it = state().calls.find(entryPoint);
  return it == state().calls.end() ? 0 : it->second;
}

void setNoAlgorithm(bool none) { state().noAlgorithm = none; }

void setNoEpilogue(bool none) { state().noEpilogue = none; }

Live live() {
  State &s = state();
  return {int(s.handles.size()), int(s.descs.size()), int(s.layouts.size()),
          int(s.preferences.size())};
}

const std::vector<Matmul> &matmuls() { return state().matmuls; }

} // namespace mockcublaslt

//===----------------------------------------------------------------------===//
// cuBLASLt entry points
//===----------------------------------------------------------------------===//

extern "C" {

size_t cublasLtGetVersion() { return 130100; }

const char *cublasLtGetStatusName(Status status) {
  switch (status) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case 1:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case 8:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 13:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 15:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "CUBLAS_STATUS_UNKNOWN";
  }
}

const char *cublasLtGetStatusString(Status status) {
  switch (status) {
  case 0:
    return "success";
  case 7:
    return "an invalid value was used as an argument";
  default:
    return "an error (fake cuBLASLt)";
  }
}

Status cublasLtCreate(Handle **handle) {
  FAKE_ENTER("cublasLtCreate");
  if (!mockcuda::contextCurrent())
    return violation(kNotInitialized, "cublasLtCreate", "no current context");
  *handle = new Handle;
  state().handles.insert(*handle);
  mockcuda::recordEvent("cublasLtCreate");
  return kSuccess;
}

Status cublasLtDestroy(Handle *handle) {
  FAKE_ENTER("cublasLtDestroy");
  if (!live(state().handles, handle))
    return violation(kNotInitialized, "cublasLtDestroy", "not a live handle");
  // The handle's resources live in the context it was created in.
  if (!mockcuda::contextCurrent())
    violation(kSuccess, "cublasLtDestroy", "no current context");
  state().handles.erase(handle);
  delete handle;
  mockcuda::recordEvent("cublasLtDestroy");
  return kSuccess;
}

Status cublasLtMatmulDescCreate(Desc **desc, int compute, int scale) {
  FAKE_ENTER("cublasLtMatmulDescCreate");
  if (compute != kCompute32F && compute != kCompute64F &&
      compute != kCompute32FFastTF32)
    return kInvalidValue;
  *desc = new Desc{compute, scale, {0, 0}, kEpilogueDefault, 0, 0, 0};
  state().descs.insert(*desc);
  return kSuccess;
}

Status cublasLtMatmulDescDestroy(Desc *desc) {
  FAKE_ENTER("cublasLtMatmulDescDestroy");
  if (!live(state().descs, desc))
    return violation(kInvalidValue, "cublasLtMatmulDescDestroy",
                     "not a live descriptor");
  state().descs.erase(desc);
  delete desc;
  mockcuda::recordEvent("cublasLtMatmulDescDestroy");
  return kSuccess;
}

Status cublasLtMatmulDescSetAttribute(Desc *desc, int attribute,
                                      const void *value, size_t size) {
  const char *entry = "cublasLtMatmulDescSetAttribute";
  FAKE_ENTER(entry);
  if (!live(state().descs, desc))
    return violation(kInvalidValue, entry, "not a live descriptor");
  if (attribute == kDescBiasPointer) {
    if (size != sizeof(void *))
      return violation(kInvalidValue, entry, "the bias pointer is a pointer");
    std::memcpy(&desc->biasPointer, value, sizeof desc->biasPointer);
    return kSuccess;
  }
  if (attribute == kDescAuxPointer) {
    if (size != sizeof(void *))
      return violation(kInvalidValue, entry, "the aux pointer is a pointer");
    std::memcpy(&desc->auxPointer, value, sizeof desc->auxPointer);
    return kSuccess;
  }
  if (attribute == kDescAuxLd) {
    if (size != sizeof(int64_t))
      return violation(kInvalidValue, entry, "the aux ld is an int64_t");
    std::memcpy(&desc->auxLd, value, sizeof desc->auxLd);
    return kSuccess;
  }
  if (attribute == kDescEpilogue) {
    if (size != sizeof(uint32_t))
      return violation(kInvalidValue, entry, "an epilogue is a uint32_t");
    uint32_t epilogue;
    std::memcpy(&epilogue, value, sizeof epilogue);
    if (epilogue != kEpilogueDefault && epilogue != kEpilogueBias &&
        epilogue != kEpilogueGeluAuxBias && epilogue != kEpilogueBgradA &&
        epilogue != kEpilogueBgradB)
      return violation(kInvalidValue, entry,
                       "epilogue " + std::to_string(epilogue) +
                           " is not emulated (extend the fake)");
    desc->epilogue = epilogue;
    return kSuccess;
  }
  if (attribute != kDescTransA && attribute != kDescTransB)
    return violation(kInvalidValue, entry,
                     "attribute " + std::to_string(attribute) +
                         " is not emulated (extend the fake)");
  if (size != sizeof(int32_t))
    return violation(kInvalidValue, entry, "a transpose is an int32_t");
  int32_t op;
  std::memcpy(&op, value, sizeof op);
  if (op != 0 && op != 1)
    return violation(kInvalidValue, entry,
                     "only CUBLAS_OP_N and CUBLAS_OP_T are emulated");
  desc->trans[attribute == kDescTransA ? 0 : 1] = op;
  return kSuccess;
}

Status cublasLtMatrixLayoutCreate(Layout **layout, int type, uint64_t rows,
                                  uint64_t cols, int64_t ld) {
  FAKE_ENTER("cublasLtMatrixLayoutCreate");
  if (!elementBytes(type))
    return kNotSupported;
  if (rows == 0 || cols == 0 || ld < int64_t(rows))
    return kInvalidValue;
  *layout = new Layout{type, rows, cols, ld, 1, 0};
  state().layouts.insert(*layout);
  return kSuccess;
}

Status cublasLtMatrixLayoutDestroy(Layout *layout) {
  FAKE_ENTER("cublasLtMatrixLayoutDestroy");
  if (!live(state().layouts, layout))
    return violation(kInvalidValue, "cublasLtMatrixLayoutDestroy",
                     "not a live layout");
  state().layouts.erase(layout);
  delete layout;
  mockcuda::recordEvent("cublasLtMatrixLayoutDestroy");
  return kSuccess;
}

Status cublasLtMatrixLayoutSetAttribute(Layout *layout, int attribute,
                                        const void *value, size_t size) {
  const char *entry = "cublasLtMatrixLayoutSetAttribute";
  FAKE_ENTER(entry);
  if (!live(state().layouts, layout))
    return violation(kInvalidValue, entry, "not a live layout");
  if (attribute == kLayoutBatchCount && size == sizeof(int32_t)) {
    int32_t count;
    std::memcpy(&count, value, sizeof count);
    if (count < 1)
      return kInvalidValue;
    layout->batch = count;
    return kSuccess;
  }
  if (attribute == kLayoutBatchStride && size == sizeof(int64_t)) {
    std::memcpy(&layout->stride, value, sizeof layout->stride);
    return kSuccess;
  }
  return violation(kInvalidValue, entry,
                   "attribute " + std::to_string(attribute) + " of " +
                       std::to_string(size) +
                       " bytes is not emulated (extend the fake)");
}

Status cublasLtMatmulPreferenceCreate(Preference **preference) {
  FAKE_ENTER("cublasLtMatmulPreferenceCreate");
  *preference = new Preference;
  state().preferences.insert(*preference);
  return kSuccess;
}

Status cublasLtMatmulPreferenceDestroy(Preference *preference) {
  FAKE_ENTER("cublasLtMatmulPreferenceDestroy");
  if (!live(state().preferences, preference))
    return violation(kInvalidValue, "cublasLtMatmulPreferenceDestroy",
                     "not a live preference");
  state().preferences.erase(preference);
  delete preference;
  return kSuccess;
}

Status cublasLtMatmulPreferenceSetAttribute(Preference *preference,
                                            int attribute, const void *value,
                                            size_t size) {
  const char *entry = "cublasLtMatmulPreferenceSetAttribute";
  FAKE_ENTER(entry);
  if (!live(state().preferences, preference))
    return violation(kInvalidValue, entry, "not a live preference");
  if (attribute == kPrefMaxWorkspace && size == sizeof(uint64_t)) {
    std::memcpy(&preference->maxWorkspace, value, size);
    return kSuccess;
  }
  if (attribute >= kPrefMinAlignmentA && attribute < kPrefMinAlignmentA + 4 &&
      size == sizeof(uint32_t)) {
    uint32_t bytes;
    std::memcpy(&bytes, value, size);
    if (bytes == 0 || (bytes & (bytes - 1)))
      return violation(kInvalidValue, entry,
                       "alignment " + std::to_string(bytes) +
                           " is not a power of two");
    preference->alignment[attribute - kPrefMinAlignmentA] = bytes;
    return kSuccess;
  }
  return violation(kInvalidValue, entry,
                   "attribute " + std::to_string(attribute) + " of " +
                       std::to_string(size) +
                       " bytes is not emulated (extend the fake)");
}

Status cublasLtMatmulAlgoGetHeuristic(Handle *handle, Desc *desc, Layout *a,
                                      Layout *b, Layout *c, Layout *d,
                                      Preference *preference, int requested,
                                      HeuristicResult *results, int *found) {
  const char *entry = "cublasLtMatmulAlgoGetHeuristic";
  FAKE_ENTER(entry);
  State &s = state();
  if (!live(s.handles, handle) || !live(s.descs, desc) || !live(s.layouts, a) ||
      !live(s.layouts, b) || !live(s.layouts, c) || !live(s.layouts, d) ||
      !live(s.preferences, preference))
    return violation(kInvalidValue, entry, "an object is not live");
  if (requested < 1 || !results || !found)
    return violation(kInvalidValue, entry, "nowhere to put the result");
  std::string problem = checkProblem(*desc, *a, *b, *c, *d);
  if (!problem.empty())
    return violation(kInvalidValue, entry, problem);
  *found = 0;
  if (s.noAlgorithm || (s.noEpilogue && desc->epilogue != kEpilogueDefault))
    return kSuccess;
  std::memset(&results[0], 0, sizeof results[0]);
  // The "algorithm" remembers the alignments it was chosen for.
  results[0].algo.data[0] = kAlgoMagic;
  for (int i = 0; i < 4; ++i)
    results[0].algo.data[1 + i] = preference->alignment[i];
  // A split-K algorithm's fp32 partial sums, as much as the preference
  // allows: the fake's algorithms use the workspace whenever they may.
  uint64_t partials = d->rows * d->cols * uint64_t(d->batch) * 4;
  results[0].workspaceSize = std::min(partials, preference->maxWorkspace);
  results[0].algo.data[5] = results[0].workspaceSize;
  results[0].state = kSuccess;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return kSuccess;
}

Status cublasLtMatmul(Handle *handle, Desc *desc, const void *alpha,
                      const void *A, Layout *a, const void *B, Layout *b,
                      const void *beta, const void *C, Layout *c, void *D,
                      Layout *d, const Algo *algo, void *workspace,
                      size_t workspaceBytes, void *stream) {
  const char *entry = "cublasLtMatmul";
  FAKE_ENTER(entry);
  State &s = state();
  if (!live(s.handles, handle) || !live(s.descs, desc) || !live(s.layouts, a) ||
      !live(s.layouts, b) || !live(s.layouts, c) || !live(s.layouts, d))
    return violation(kInvalidValue, entry, "an object is not live");
  if (!mockcuda::contextCurrent())
    return violation(kNotInitialized, entry, "no current context");
  if (stream && !mockcuda::streamValid(stream))
    return violation(kInvalidValue, entry,
                     "not a live stream of the current context");
  std::string problem = checkProblem(*desc, *a, *b, *c, *d);
  if (!problem.empty())
    return violation(kInvalidValue, entry, problem);
  if (!algo || algo->data[0] != kAlgoMagic)
    return violation(kInvalidValue, entry,
                     "the algorithm is not one the heuristic returned");
  if (workspaceBytes && !workspace)
    return violation(kInvalidValue, entry, "workspace size without workspace");
  const uint64_t needed = algo->data[5];
  if (workspaceBytes < needed)
    return violation(kInvalidValue, entry,
                     "the algorithm needs " + std::to_string(needed) +
                         " bytes of workspace, got " +
                         std::to_string(workspaceBytes));
  if (needed && !mockcuda::hostRange(reinterpret_cast<uint64_t>(workspace),
                                     needed, "cublasLtMatmul workspace"))
    return kInvalidValue;
  if (!alpha || !beta)
    return violation(kInvalidValue, entry, "alpha or beta is null");

  // The alignment the algorithm was chosen for must hold for every matrix:
  // the base pointers and, in a batch, the batch strides.
  const void *pointers[4] = {A, B, C, D};
  const Layout *layouts[4] = {a, b, c, d};
  const char *names[4] = {"A", "B", "C", "D"};
  const uint64_t e = elementBytes(a->type);
  mockcublaslt::Matmul record;
  for (int i = 0; i < 4; ++i) {
    uint64_t promised = algo->data[1 + i];
    record.alignment[i] = uint32_t(promised);
    uint64_t address = reinterpret_cast<uint64_t>(pointers[i]);
    uint64_t stride =
        layouts[i]->batch > 1 ? uint64_t(layouts[i]->stride) * e : 0;
    if (address % promised || stride % promised)
      return violation(kInvalidValue, entry,
                       std::string(names[i]) + " at " +
                           std::to_string(address) + " with batch stride " +
                           std::to_string(stride) +
                           " bytes is not aligned to the " +
                           std::to_string(promised) + " bytes promised");
  }

  const bool fp64 = desc->scale == kR64F;
  double alphaValue, betaValue;
  if (fp64) {
    std::memcpy(&alphaValue, alpha, 8);
    std::memcpy(&betaValue, beta, 8);
  } else {
    float a32, b32;
    std::memcpy(&a32, alpha, 4);
    std::memcpy(&b32, beta, 4);
    alphaValue = a32;
    betaValue = b32;
  }

  const uint64_t m = d->rows, n = d->cols;
  const uint64_t k = desc->trans[0] ? a->rows : a->cols;
  record.dataType = a->type;
  record.computeType = desc->compute;
  record.scaleType = desc->scale;
  record.transA = desc->trans[0];
  record.transB = desc->trans[1];
  record.batchCount = d->batch;
  record.alpha = alphaValue;
  record.beta = betaValue;
  record.a = operand(A, *a);
  record.b = operand(B, *b);
  record.c = operand(C, *c);
  record.d = operand(D, *d);
  record.epilogue = desc->epilogue;
  record.biasPointer = desc->biasPointer;
  record.auxPointer = desc->auxPointer;
  // What the matmul does to memory, with the descriptors as they are now
  // (cuBLASLt's captured kernels keep theirs): done now, or at each launch
  // of the graph being captured.
  record.workspace = reinterpret_cast<uint64_t>(workspace);
  record.workspaceBytes = needed;
  auto work = [=, desc = *desc, a = *a, b = *b, c = *c, d = *d]() -> bool {
    // The algorithm scribbles over its workspace first: were it to overlap
    // an operand, the result would show it.
    if (needed)
      std::memset(mockcuda::hostRange(reinterpret_cast<uint64_t>(workspace),
                                      needed, "cublasLtMatmul workspace"),
                  0xAB, needed);
    for (int32_t batch = 0; batch < d.batch; ++batch) {
      unsigned char *am = matrix(A, a, batch, "A");
      unsigned char *bm = matrix(B, b, batch, "B");
      unsigned char *cm = betaValue != 0 ? matrix(C, c, batch, "C") : nullptr;
      unsigned char *dm = matrix(D, d, batch, "D");
      if (!am || !bm || (betaValue != 0 && !cm) || !dm)
        return false; // an illegal address on a GPU
      // The epilogue's vector, of D's type: the bias (D's rows), or the
      // sums over k of op(A) (BGRADA: D's rows) or op(B) (BGRADB: its
      // columns).
      const uint32_t epilogue = desc.epilogue;
      unsigned char *vector = nullptr;
      if (epilogue != kEpilogueDefault) {
        uint64_t length = epilogue == kEpilogueBgradB ? n : m;
        vector = static_cast<unsigned char *>(mockcuda::hostRange(
            desc.biasPointer, length * e, "cublasLtMatmul bias vector"));
        if (!vector)
          return false;
      }
      // GELU's input, beside D (column-major, D's shape, AUX_LD apart).
      unsigned char *aux = nullptr;
      if (epilogue == kEpilogueGeluAuxBias) {
        aux = static_cast<unsigned char *>(mockcuda::hostRange(
            desc.auxPointer, ((n - 1) * uint64_t(desc.auxLd) + m) * e,
            "cublasLtMatmul aux"));
        if (!aux)
          return false;
      }
      if (epilogue == kEpilogueBgradA || epilogue == kEpilogueBgradB) {
        const bool rows = epilogue == kEpilogueBgradA;
        for (uint64_t v = 0; v < (rows ? m : n); ++v) {
          double sum = 0;
          for (uint64_t p = 0; p < k; ++p)
            sum += rows ? load(a.type, am + (desc.trans[0] ? p + v * a.ld
                                                           : v + p * a.ld) *
                                                  e)
                        : load(b.type, bm + (desc.trans[1] ? v + p * b.ld
                                                           : p + v * b.ld) *
                                                  e);
          store(d.type, vector + v * e, sum);
        }
      }
      for (uint64_t i = 0; i < m; ++i)
        for (uint64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (uint64_t p = 0; p < k; ++p) {
            // op(A)(i, p) and op(B)(p, j) of the stored column-major
            // matrices.
            uint64_t ai = desc.trans[0] ? p + i * a.ld : i + p * a.ld;
            uint64_t bi = desc.trans[1] ? j + p * b.ld : p + j * b.ld;
            sum += load(a.type, am + ai * e) * load(b.type, bm + bi * e);
          }
          double result = alphaValue * sum;
          if (cm)
            result += betaValue * load(c.type, cm + (i + j * c.ld) * e);
          if (epilogue == kEpilogueBias || epilogue == kEpilogueGeluAuxBias)
            result += load(d.type, vector + i * e);
          if (aux) {
            // The input stored, then the tanh approximation of GELU.
            store(d.type, aux + (i + j * uint64_t(desc.auxLd)) * e, result);
            double x = load(d.type, aux + (i + j * uint64_t(desc.auxLd)) * e);
            result = 0.5 * x *
                     (1.0 + std::tanh(0.7978845608028654 *
                                      (x + 0.044715 * x * x * x)));
          }
          store(d.type, dm + (i + j * d.ld) * e, result);
        }
    }
    state().matmuls.push_back(record);
    mockcuda::recordEvent("cublasLtMatmul");
    mockcuda::workDone(true);
    return true;
  };
  if (!mockcuda::capturing(stream))
    return work() ? kSuccess : kExecutionFailed;
  mockcuda::submit(stream, [work] { (void)work(); });
  return kSuccess;
}

} // extern "C"
