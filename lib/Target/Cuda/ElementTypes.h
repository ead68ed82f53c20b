//===- ElementTypes.h - element types and literals in CUDA C++ --*- C++ -*-===//
//
// Internal to the CUDA target. How a kernel stores and computes each
// element type it supports: the C type of a buffer's elements, the
// register type values are computed in and the conversions between the
// two (f16 and bf16 computed in float; the small floats and the 4- and
// 2-bit integers stored as bits in a byte, which Prelude.cuh's helpers
// decode and encode), the accumulator type of a reduction, and literals.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_LIB_TARGET_CUDA_ELEMENTTYPES_H
#define MEMFIT_LIB_TARGET_CUDA_ELEMENTTYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::memfit::cuda {

/// Whether `type` is f16 or bf16: stored in 16 bits, computed in fp32.
bool isHalfFloat(Type type);

/// A small float format that Prelude.cuh's memfit_fp_round, _encode and
/// _decode convert (see there): the 8-bit floats and FLOAT4E2M1.
struct SmallFloat {
  int ebits, mbits, bias;
  double maxValue;
  int kind; // 0 IEEE, 1 FN, 2 FNUZ, 3 no infinity or NaN
  /// "ebits, mbits, bias[, maxValue], kind" for the prelude's functions.
  std::string args(bool withMax) const;
};
/// The format of a small float type; nothing for other types.
std::optional<SmallFloat> smallFloatOf(Type type);
/// The format memfit_fp_round rounds to for a cast to `type`: the small
/// floats', or f16's and bf16's (held in float registers).
std::optional<SmallFloat> roundingFormatOf(Type type);
/// Whether `type` is stored as bits in a byte that kernels decode (the
/// small floats, the 4- and 2-bit integers in a byte's low bits).
bool isPackedType(Type type);

/// The C type of an element type the kernels support, as it is stored in
/// a buffer: `__half` for f16, `__nv_bfloat16` for bf16, `unsigned char`
/// for the packed types.
FailureOr<std::string> cType(Type type);
/// The type a kernel computes a value of element type `type` in: float for
/// f16, bf16 and the small floats, int for the 4- and 2-bit integers
/// (loaded with widen, stored with narrow), unsigned int for u16, cType
/// otherwise.
FailureOr<std::string> regType(Type type);
/// `access`, an element of `type` in a buffer, as its register value:
/// `__bfloat162float(access)` for bf16, `__half2float(access)` for f16,
/// decoded or sign-extended for the packed types, its byte compared with
/// 0 for i1, `access` otherwise.
std::string widen(Type type, StringRef access);
/// `access` as a value of the accumulator type `acc`: widened for f16,
/// bf16 and the packed types, `(acc)access` otherwise.
std::string loadAs(StringRef acc, Type type, StringRef access);
/// `expr`, a register value, as an element of `type` to store:
/// `__float2bfloat16_rn(expr)` for bf16, `__float2half_rn(expr)` for f16
/// (round to nearest even, as the runtime's conversions), encoded (small
/// floats: nearest even, not saturating) or masked (4- and 2-bit integers:
/// wrapping) for the packed types, `expr` otherwise.
std::string narrow(Type type, StringRef expr);
/// The accumulator type of a row or a reduction: float for f16, bf16, the
/// small floats and f32, double for f64, unsigned long long for u64, long
/// long for other integers; a diagnostic on `op` otherwise.
FailureOr<std::string> accType(Operation *op, Type type);

/// The float function for `type`: expf for f32, exp for f64.
std::string mathFn(StringRef base, Type type);
/// A float or double literal; NaN and the infinities as bit patterns.
std::string floatLiteral(double value, bool isDouble);
/// A long long literal.
std::string intLiteral(int64_t value);
/// A literal of `type` from an integer or float attribute.
FailureOr<std::string> literal(Attribute attr, Type type);

} // namespace mlir::memfit::cuda

#endif // MEMFIT_LIB_TARGET_CUDA_ELEMENTTYPES_H
