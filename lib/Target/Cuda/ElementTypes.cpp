//===- ElementTypes.cpp - element types and literals in CUDA C++ ----------===//
//
// The C and register types of the element types, the conversions between
// them, and literals; see ElementTypes.h.
//
//===----------------------------------------------------------------------===//

#include "ElementTypes.h"

#include "KernelEmitter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::memfit;
using namespace mlir::memfit::cuda;

bool cuda::isHalfFloat(Type type) { return type.isF16() || type.isBF16(); }

std::optional<cuda::SmallFloat> cuda::smallFloatOf(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return SmallFloat{4, 3, 7, 448.0, 1};
  if (isa<Float8E4M3FNUZType>(type))
    return SmallFloat{4, 3, 8, 240.0, 2};
  if (isa<Float8E5M2Type>(type))
    return SmallFloat{5, 2, 15, 57344.0, 0};
  if (isa<Float8E5M2FNUZType>(type))
    return SmallFloat{5, 2, 16, 57344.0, 2};
  if (isa<Float4E2M1FNType>(type))
    return SmallFloat{2, 1, 1, 6.0, 3};
  return std::nullopt;
}

std::optional<cuda::SmallFloat> cuda::roundingFormatOf(Type type) {
  if (type.isF16())
    return SmallFloat{5, 10, 15, 65504.0, 0};
  if (type.isBF16())
    return SmallFloat{8, 7, 127, 3.3895313892515355e38, 0};
  return smallFloatOf(type);
}

std::string cuda::SmallFloat::args(bool withMax) const {
  std::string text = llvm::formatv("{0}, {1}, {2}", ebits, mbits, bias);
  if (withMax)
    text += ", " + floatLiteral(maxValue, true);
  return text + ", " + std::to_string(kind);
}

/// The width of a 4- or 2-bit integer type (stored in a byte's low bits);
/// 0 for other types.
static unsigned subByteWidth(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  return integer && (integer.getWidth() == 4 || integer.getWidth() == 2)
             ? integer.getWidth()
             : 0;
}

bool cuda::isPackedType(Type type) {
  return smallFloatOf(type).has_value() || subByteWidth(type) != 0;
}

FailureOr<std::string> cuda::cType(Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF16())
    return std::string("__half");
  if (type.isBF16())
    return std::string("__nv_bfloat16");
  if (type.isF64())
    return std::string("double");
  if (isPackedType(type))
    return std::string("unsigned char");
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer)
    return failure();
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 1:
    return std::string("bool");
  case 64:
    return std::string(isUnsigned ? "unsigned long long" : "long long");
  case 32:
    return std::string(isUnsigned ? "unsigned int" : "int");
  case 16:
    return std::string(isUnsigned ? "unsigned short" : "short");
  case 8:
    return std::string(isUnsigned ? "unsigned char" : "signed char");
  default:
    return failure();
  }
}

FailureOr<std::string> cuda::regType(Type type) {
  if (isHalfFloat(type) || smallFloatOf(type))
    return std::string("float");
  if (subByteWidth(type))
    return std::string("int");
  // Unsigned short operands would promote to int, whose products overflow.
  if (type.isUnsignedInteger(16))
    return std::string("unsigned int");
  return cType(type);
}

std::string cuda::widen(Type type, StringRef access) {
  // A bool is read as its byte (0 or 1): the same value, and a load that
  // the host compiler vectorizes (GCC does not vectorize loads of bool).
  if (type.isInteger(1))
    return ("(*(const unsigned char *)&" + access + " != 0)").str();
  if (type.isBF16())
    return ("__bfloat162float(" + access + ")").str();
  if (type.isF16())
    return ("__half2float(" + access + ")").str();
  if (std::optional<SmallFloat> f = smallFloatOf(type))
    return ("memfit_fp_decode(" + access + ", " + f->args(false) + ")").str();
  if (unsigned width = subByteWidth(type)) {
    unsigned shift = 8 - width;
    if (type.isUnsignedInteger())
      return llvm::formatv("((int)({0}) & {1})", access, (1 << width) - 1);
    // Sign-extended from the byte's low bits.
    return llvm::formatv("((int)(signed char)(({0}) << {1}) >> {1})", access,
                         shift);
  }
  return access.str();
}

std::string cuda::loadAs(StringRef acc, Type type, StringRef access) {
  if (isHalfFloat(type))
    return widen(type, access);
  if (isPackedType(type))
    return ("(" + acc + ")" + widen(type, access)).str();
  return ("(" + acc + ")" + access).str();
}

std::string cuda::narrow(Type type, StringRef expr) {
  if (type.isBF16())
    return ("__float2bfloat16_rn(" + expr + ")").str();
  if (type.isF16())
    return ("__float2half_rn(" + expr + ")").str();
  if (std::optional<SmallFloat> f = smallFloatOf(type))
    return ("(unsigned char)memfit_fp_encode(" + expr + ", " + f->args(true) +
            ")")
        .str();
  if (unsigned width = subByteWidth(type))
    return llvm::formatv("(unsigned char)((int)({0}) & {1})", expr,
                         (1 << width) - 1);
  return expr.str();
}

FailureOr<std::string> cuda::accType(Operation *op, Type type) {
  if (type.isF32() || isHalfFloat(type) || smallFloatOf(type))
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (type.isUnsignedInteger(64))
    return std::string("unsigned long long");
  if (succeeded(cType(type)) && type.isInteger())
    return std::string("long long");
  return cannotEmit(op) << "unsupported element type " << type, failure();
}

std::string cuda::mathFn(StringRef base, Type type) {
  return type.isF64() ? base.str() : (base + "f").str();
}

std::string cuda::floatLiteral(double value, bool isDouble) {
  if (std::isnan(value))
    return isDouble ? "__longlong_as_double(0x7ff8000000000000LL)"
                    : "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) {
    if (isDouble)
      return value > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                       : "__longlong_as_double((long long)0xfff0000000000000ULL)";
    return value > 0 ? "__int_as_float(0x7f800000)"
                     : "__int_as_float((int)0xff800000u)";
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), isDouble ? "%.17g" : "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".en") == std::string::npos)
    text += ".0";
  if (!isDouble)
    text += "f";
  return value < 0 ? "(" + text + ")" : text;
}

std::string cuda::intLiteral(int64_t value) {
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  std::string text = std::to_string(value) + "LL";
  return value < 0 ? "(" + text + ")" : text;
}

FailureOr<std::string> cuda::literal(Attribute attr, Type type) {
  if (type.isInteger(1)) {
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return std::string(i.getValue().isZero() ? "false" : "true");
    if (auto b = dyn_cast<BoolAttr>(attr))
      return std::string(b.getValue() ? "true" : "false");
    return failure();
  }
  if (isa<FloatType>(type)) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return floatLiteral(f.getValueAsDouble(), type.isF64());
    if (auto i = dyn_cast<IntegerAttr>(attr))
      return floatLiteral(static_cast<double>(i.getInt()), type.isF64());
    return failure();
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    FailureOr<std::string> t = regType(type);
    if (failed(t))
      return failure();
    return "((" + *t + ")" + intLiteral(i.getValue().getSExtValue()) + ")";
  }
  return failure();
}
