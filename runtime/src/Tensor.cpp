//===- Tensor.cpp - host tensors, .npy files and reproducible fills -------===//

#include "memfit/runtime/Tensor.h"

#include "Files.h"
#include "Half.h"

#include <cstring>

namespace memfit::rt {

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(t.numElements()) * dtypeSize(dtype), 0);
  return t;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d < 0 ? 0 : d;
  return n;
}

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  std::string s;
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(dtype);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;

/// The .npy descr of a dtype: NumPy's own spelling, or raw bytes of the
/// element's size for the types NumPy has no dtype of (dtypeIsOpaqueToNumpy).
const char *npyDescr(DType type) {
  switch (type) {
  case DType::f32:
    return "<f4";
  case DType::f64:
    return "<f8";
  case DType::f16:
    return "<f2";
  case DType::i64:
    return "<i8";
  case DType::i32:
    return "<i4";
  case DType::i16:
    return "<i2";
  case DType::i8:
    return "|i1";
  case DType::u64:
    return "<u8";
  case DType::u32:
    return "<u4";
  case DType::u16:
    return "<u2";
  case DType::u8:
    return "|u1";
  case DType::i1:
    return "|b1";
  case DType::bf16:
    return "|V2";
  default:
    return "|V1";
  }
}

/// The fields of a .npy header, a Python dict literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  bool haveDescr = false, haveOrder = false, haveShape = false;
};

class NpyHeaderParser {
public:
  explicit NpyHeaderParser(const std::string &text) : s_(text) {}

  bool parse(NpyHeader &h, std::string &error) {
    skip();
    if (!eat('{'))
      return fail(error, "expected '{'");
    while (true) {
      skip();
      if (eat('}'))
        break;
      std::string key;
      if (!string(key))
        return fail(error, "expected a quoted key");
      skip();
      if (!eat(':'))
        return fail(error, "expected ':' after '" + key + "'");
      skip();
      if (key == "descr") {
        if (!string(h.descr))
          return fail(error, "descr: expected a string");
        h.haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          h.fortranOrder = true;
        else if (word("False"))
          h.fortranOrder = false;
        else
          return fail(error, "fortran_order: expected True or False");
        h.haveOrder = true;
      } else if (key == "shape") {
        if (!tuple(h.shape))
          return fail(error, "shape: expected a tuple of integers");
        h.haveShape = true;
      } else {
        return fail(error, "unknown key '" + key + "'");
      }
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat('}'))
        break;
      return fail(error, "expected ',' or '}'");
    }
    if (!h.haveDescr || !h.haveOrder || !h.haveShape)
      return fail(error, "missing descr, fortran_order or shape");
    return true;
  }

private:
  static bool fail(std::string &error, const std::string &message) {
    error = message;
    return false;
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool word(const char *w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0)
      return false;
    pos_ += n;
    return true;
  }
  bool string(std::string &out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return false;
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos)
      return false;
    out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool tuple(std::vector<int64_t> &out) {
    out.clear();
    if (!eat('('))
      return false;
    while (true) {
      skip();
      if (eat(')'))
        return true;
      size_t start = pos_;
      int64_t value = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (value > (int64_t(1) << 56))
          return false;
        value = value * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start)
        return false;
      eat('L'); // Python 2 long literals
      out.push_back(value);
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat(')'))
        return true;
      return false;
    }
  }

  const std::string &s_;
  size_t pos_ = 0;
};

/// The dtype of a .npy descr. Raw bytes ('V1', 'V2', and 'f1', which is
/// what NumPy writes for ml_dtypes' float8_e5m2) are `opaque` when that is
/// a type NumPy has no dtype of, with elements of that size.
StatusOr<DType> dtypeFromDescr(const std::string &path,
                               const std::string &descr,
                               std::optional<DType> opaque) {
  std::string body = descr.size() > 1 ? descr.substr(1) : descr;
  char order = descr.empty() ? '?' : descr[0];
  bool oneByte = body == "i1" || body == "u1" || body == "b1" || body == "V1" ||
                 body == "f1";
  if (order == '>' && !oneByte && body != "V2")
    return invalidArgument(path + ": big-endian data ('" + descr +
                           "') is not supported; save it little-endian");
  if (body == "V1" || body == "V2" || body == "f1") {
    size_t size = body == "V2" ? 2 : 1;
    if (opaque && dtypeIsOpaqueToNumpy(*opaque) && dtypeSize(*opaque) == size)
      return *opaque;
    return invalidArgument(
        path + ": dtype '" + descr + "' holds raw " + std::to_string(size) +
        "-byte elements, read only where the model expects a type NumPy has "
        "none of (bf16, float8, float4, int4, uint4, int2, uint2: ml_dtypes' "
        "arrays)" +
        (opaque ? std::string(", not ") + dtypeName(*opaque) : std::string()));
  }
  // NumPy's own types: the descr writeNpy writes, in little-endian or native
  // order; one-byte types have no byte order ('|'), any prefix is accepted.
  for (DType type : kAllDTypes) {
    const char *own = npyDescr(type);
    if (!dtypeIsOpaqueToNumpy(type) && body == own + 1 &&
        (own[0] == '|' || order == '<' || order == '='))
      return type;
  }
  return invalidArgument(path + ": unsupported dtype '" + descr +
                         "' (supported: <f4, <f8, <f2, <i8, <i4, <i2, |i1, "
                         "<u8, <u4, <u2, |u1, |b1, and raw |V1 or |V2 for "
                         "ml_dtypes' bfloat16, float8, float4 and sub-byte "
                         "integers)");
}

/// The bits of a byte that a sub-byte type uses; 0 for the other types.
uint8_t subByteMask(DType type) {
  switch (type) {
  case DType::f4e2m1:
  case DType::i4:
  case DType::u4:
    return 0x0f;
  case DType::i2:
  case DType::u2:
    return 0x03;
  default:
    return 0;
  }
}

uint32_t readLittleEndian(const std::string &data, size_t offset,
                          size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= uint32_t(static_cast<unsigned char>(data[offset + i])) << (8 * i);
  return v;
}

} // namespace

StatusOr<Tensor> readNpy(const std::string &path, std::optional<DType> opaque) {
  StatusOr<std::string> file = readFile(path);
  if (!file)
    return file.status();
  const std::string &data = *file;
  if (data.size() < kNpyMagicSize + 4 ||
      data.compare(0, kNpyMagicSize, kNpyMagic, kNpyMagicSize) != 0)
    return invalidArgument(path + ": not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(data[6]);
  size_t lengthBytes;
  if (major == 1)
    lengthBytes = 2;
  else if (major == 2 || major == 3)
    lengthBytes = 4;
  else
    return invalidArgument(path + ": unsupported .npy format version " +
                           std::to_string(major) + "." +
                           std::to_string(static_cast<unsigned char>(data[7])));
  size_t headerStart = 8 + lengthBytes;
  if (data.size() < headerStart)
    return invalidArgument(path + ": truncated .npy header");
  size_t headerLength = readLittleEndian(data, 8, lengthBytes);
  if (data.size() - headerStart < headerLength)
    return invalidArgument(path + ": truncated .npy header (" +
                           std::to_string(headerLength) + " bytes declared)");
  std::string headerText = data.substr(headerStart, headerLength);

  NpyHeader header;
  std::string error;
  if (!NpyHeaderParser(headerText).parse(header, error))
    return invalidArgument(path + ": malformed .npy header: " + error);
  if (header.fortranOrder)
    return invalidArgument(path +
                           ": fortran_order True is not supported; save "
                           "a C-ordered array (numpy.ascontiguousarray)");
  StatusOr<DType> dtype = dtypeFromDescr(path, header.descr, opaque);
  if (!dtype)
    return dtype.status();

  uint64_t elements = 1;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(elements, uint64_t(d), &elements))
      return invalidArgument(path + ": shape overflows");
  uint64_t expected;
  if (__builtin_mul_overflow(elements, dtypeSize(*dtype), &expected))
    return invalidArgument(path + ": shape overflows");
  size_t payload = data.size() - headerStart - headerLength;
  if (payload != expected)
    return invalidArgument(
        path + ": has " + std::to_string(payload) + " bytes of data but " +
        describe(*dtype, header.shape) + " needs " + std::to_string(expected));
  Tensor t;
  t.dtype = *dtype;
  t.shape = header.shape;
  t.data.assign(data.begin() +
                    static_cast<std::ptrdiff_t>(headerStart + headerLength),
                data.end());
  if (t.dtype == DType::i1)
    for (uint8_t &b : t.data)
      b = b != 0;
  // The sub-byte types keep their value in the low bits: what ml_dtypes
  // writes, and what the kernels read.
  if (uint8_t mask = subByteMask(t.dtype))
    for (uint8_t &b : t.data)
      b &= mask;
  return t;
}

Status writeNpy(const std::string &path, const Tensor &tensor) {
  const char *descr = npyDescr(tensor.dtype);
  uint64_t expected = uint64_t(tensor.numElements()) * dtypeSize(tensor.dtype);
  if (tensor.data.size() != expected)
    return invalidArgument(
        path + ": tensor " + describe(tensor.dtype, tensor.shape) + " has " +
        std::to_string(tensor.data.size()) + " bytes of data, expected " +
        std::to_string(expected));
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  if (tensor.shape.size() == 1)
    shape += ",";
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a newline so the data starts 64-byte aligned.
  auto paddedTotal = [&](size_t prefix) {
    return (prefix + header.size() + 1 + 63) / 64 * 64;
  };
  size_t version = 1, prefix = 10;
  if (paddedTotal(prefix) - prefix > 0xffff) {
    version = 2;
    prefix = 12;
  }
  header.append(paddedTotal(prefix) - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string out(kNpyMagic, kNpyMagicSize);
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(reinterpret_cast<const char *>(tensor.data.data()),
             tensor.data.size());
  return writeFileAtomic(path, out.data(), out.size());
}

//===----------------------------------------------------------------------===//
// fillRandom
//===----------------------------------------------------------------------===//

namespace {

/// splitmix64: the value of a counter-based stream at `index`.
uint64_t splitmix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [-1, 1) with 24 bits of precision.
float uniformFloat(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

} // namespace

void fillRandom(Tensor &tensor, uint64_t seed, int64_t intHigh) {
  size_t n = static_cast<size_t>(tensor.numElements());
  tensor.data.assign(n * dtypeSize(tensor.dtype), 0);
  uint64_t high = intHigh > 0 ? uint64_t(intHigh) : 1;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = splitmix64(seed, i);
    switch (tensor.dtype) {
    case DType::f32:
      tensor.as<float>()[i] = uniformFloat(bits);
      break;
    case DType::f64:
      tensor.as<double>()[i] =
          static_cast<double>(bits >> 11) * (2.0 / 9007199254740992.0) - 1.0;
      break;
    case DType::f16:
      tensor.as<uint16_t>()[i] = floatToHalf(uniformFloat(bits));
      break;
    case DType::bf16:
      tensor.as<uint16_t>()[i] = floatToBf16(uniformFloat(bits));
      break;
    case DType::i64:
      tensor.as<int64_t>()[i] = static_cast<int64_t>(bits % high);
      break;
    case DType::i32:
      tensor.as<int32_t>()[i] = static_cast<int32_t>(
          bits % (high < 0x80000000ull ? high : 0x80000000ull));
      break;
    case DType::i16:
      tensor.as<int16_t>()[i] =
          static_cast<int16_t>(bits % (high < 32768 ? high : 32768));
      break;
    case DType::i8:
      tensor.as<int8_t>()[i] =
          static_cast<int8_t>(bits % (high < 128 ? high : 128));
      break;
    case DType::u64:
      tensor.as<uint64_t>()[i] = bits % high;
      break;
    case DType::u32:
      tensor.as<uint32_t>()[i] = static_cast<uint32_t>(
          bits % (high < 0x100000000ull ? high : 0x100000000ull));
      break;
    case DType::u16:
      tensor.as<uint16_t>()[i] =
          static_cast<uint16_t>(bits % (high < 65536 ? high : 65536));
      break;
    case DType::f8e4m3fn:
    case DType::f8e4m3fnuz:
    case DType::f8e5m2:
    case DType::f8e5m2fnuz: {
      // The sign and the lower half of the exponents: finite in every
      // format, never the FNUZ formats' NaN (the sign alone).
      uint8_t code = static_cast<uint8_t>((bits >> 56 & 0x80) | (bits & 0x3f));
      tensor.as<uint8_t>()[i] = code == 0x80 ? 0 : code;
      break;
    }
    case DType::f4e2m1:
    case DType::i4:
    case DType::u4:
    case DType::i2:
    case DType::u2:
      tensor.as<uint8_t>()[i] =
          static_cast<uint8_t>(bits & subByteMask(tensor.dtype));
      break;
    case DType::u8:
      tensor.as<uint8_t>()[i] =
          static_cast<uint8_t>(bits % (high < 256 ? high : 256));
      break;
    case DType::i1:
      tensor.as<uint8_t>()[i] = static_cast<uint8_t>(bits >> 63);
      break;
    }
  }
}

} // namespace memfit::rt
