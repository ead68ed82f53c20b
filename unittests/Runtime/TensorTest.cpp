//===- TensorTest.cpp - tensors, .npy files, fills and half floats --------===//

#include "TestUtil.h"

#include "memfit/runtime/Tensor.h"

#include "Files.h"
#include "Half.h"

#include <cmath>
#include <cstring>

namespace memfit::rt::test {

namespace {

void testDescribe() {
  CHECK(describe(DType::f32, {2, 16}) == "2x16xf32");
  CHECK(describe(DType::i1, {}) == "i1");
  Tensor t = Tensor::zeros(DType::f64, {3, 0, 2});
  CHECK(t.numElements() == 0 && t.data.empty());
  Tensor s = Tensor::zeros(DType::i32, {});
  CHECK(s.numElements() == 1 && s.data.size() == 4);
}

/// Writes a .npy file with the given header dict and payload.
std::string writeRawNpy(const std::string &name, const std::string &dict,
                        const std::string &payload, int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header + payload;
  std::string path = scratchDirectory() + "/" + name;
  (void)writeFile(path, out.data(), out.size());
  return path;
}

void testNpyRoundTrip() {
  const std::vector<int64_t> shapes[] = {{}, {5}, {2, 3, 4}, {1, 0}};
  int file = 0;
  for (DType t : kAllDTypes) {
    for (const std::vector<int64_t> &shape : shapes) {
      Tensor tensor = Tensor::zeros(t, shape);
      fillRandom(tensor, 17 + file, 100);
      std::string path =
          scratchDirectory() + "/t" + std::to_string(file++) + ".npy";
      if (!CHECK_OK(writeNpy(path, tensor)))
        continue;
      StatusOr<std::string> bytes = readFile(path);
      // Data starts 64-byte aligned, the header ends with a newline.
      CHECK(bytes.isOk() && (bytes->size() - tensor.data.size()) % 64 == 0 &&
            (*bytes)[bytes->size() - tensor.data.size() - 1] == '\n');
      // The types NumPy has none of are raw bytes: read as the type that
      // the reader expects.
      std::optional<DType> opaque;
      if (dtypeIsOpaqueToNumpy(t))
        opaque = t;
      StatusOr<Tensor> back = readNpy(path, opaque);
      if (!CHECK_OK(back.status()))
        continue;
      CHECK(back->dtype == t && back->shape == shape &&
            back->data == tensor.data);
      if (opaque)
        CHECK_ERROR(readNpy(path).status(),
                    "holds raw " + std::to_string(dtypeSize(t)) +
                        "-byte elements, read only where the model expects");
    }
  }
  // Raw bytes are not read as a type of another size or one NumPy has.
  Tensor bf = Tensor::zeros(DType::bf16, {2});
  std::string bfPath = scratchDirectory() + "/bf.npy";
  if (CHECK_OK(writeNpy(bfPath, bf))) {
    CHECK(readFile(bfPath)->find("'descr': '|V2'") != std::string::npos);
    CHECK_ERROR(readNpy(bfPath, DType::f8e4m3fn).status(),
                "read only where the model expects a type NumPy has none of "
                "(bf16, float8, float4, int4, uint4, int2, uint2: ml_dtypes' "
                "arrays), not f8e4m3fn");
    CHECK_ERROR(readNpy(bfPath, DType::i16).status(), ", not i16");
  }
  // Sub-byte values keep the low bits only, as ml_dtypes holds them.
  std::string int4 = writeRawNpy("int4.npy",
                                 "{'descr': '|V1', 'fortran_order': False, "
                                 "'shape': (2,), }",
                                 std::string("\xff\x07", 2));
  StatusOr<Tensor> nibbles = readNpy(int4, DType::i4);
  if (CHECK_OK(nibbles.status()))
    CHECK(nibbles->data == std::vector<uint8_t>({0x0f, 0x07}));
  // ml_dtypes' float8_e5m2 arrays are saved as '<f1'.
  std::string e5m2 = writeRawNpy("e5m2.npy",
                                 "{'descr': '<f1', 'fortran_order': False, "
                                 "'shape': (1,), }",
                                 std::string("\x3c", 1));
  StatusOr<Tensor> f8 = readNpy(e5m2, DType::f8e5m2);
  CHECK(f8.isOk() && f8->dtype == DType::f8e5m2 && f8->data[0] == 0x3c);
}

void testNpyFiles() {
  // Version 2 and 3 headers, and a Python 2 style shape.
  float values[6] = {1, 2, 3, 4, 5, 6};
  std::string payload(reinterpret_cast<const char *>(values), sizeof(values));
  for (int major : {2, 3}) {
    std::string path = writeRawNpy("v" + std::to_string(major) + ".npy",
                                   "{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (2L, 3L), }",
                                   payload, major);
    StatusOr<Tensor> t = readNpy(path);
    if (CHECK_OK(t.status()))
      CHECK(t->shape == std::vector<int64_t>({2, 3}) &&
            t->as<float>()[5] == 6.0f);
  }
  std::string boolPath = writeRawNpy(
      "bool.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
      std::string("\x00\x01\x02", 3));
  StatusOr<Tensor> b = readNpy(boolPath);
  if (CHECK_OK(b.status()))
    CHECK(b->dtype == DType::i1 && b->data == std::vector<uint8_t>({0, 1, 1}));

  struct Case {
    const char *name, *dict, *error;
    size_t payloadBytes;
  } cases[] = {
      {"big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }",
       "big.npy: big-endian data ('>f4') is not supported", 24},
      {"fortran.npy",
       "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
       "fortran.npy: fortran_order True is not supported", 24},
      {"complex.npy",
       "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
       "complex.npy: unsupported dtype '<c8'", 24},
      {"short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }",
       "short.npy: has 24 bytes of data but 7xf32 needs 28", 24},
      {"nokey.npy", "{'descr': '<f4', 'shape': (6,), }",
       "nokey.npy: malformed .npy header: missing descr, fortran_order or "
       "shape",
       24},
      {"badshape.npy",
       "{'descr': '<f4', 'fortran_order': False, 'shape': [6], }",
       "badshape.npy: malformed .npy header: shape: expected a tuple", 24},
  };
  for (const Case &c : cases) {
    std::string path =
        writeRawNpy(c.name, c.dict, payload.substr(0, c.payloadBytes));
    CHECK_ERROR(readNpy(path).status(), c.error);
  }
  std::string text = scratchDirectory() + "/text.npy";
  CHECK_OK(writeFile(text, "hello", 5));
  CHECK_ERROR(readNpy(text).status(), "text.npy: not a .npy file");
  std::string truncated = scratchDirectory() + "/truncated.npy";
  CHECK_OK(writeFile(truncated, "\x93NUMPY\x01\x00\xff\x00{'descr'", 17));
  CHECK_ERROR(readNpy(truncated).status(),
              "truncated.npy: truncated .npy header");
  CHECK_ERROR(readNpy(scratchDirectory() + "/absent.npy").status(),
              "absent.npy: cannot open");
}

void testFillRandom() {
  Tensor a = Tensor::zeros(DType::f32, {1000});
  Tensor b = a, c = a;
  fillRandom(a, 1, 0);
  fillRandom(b, 1, 0);
  fillRandom(c, 2, 0);
  CHECK(a.data == b.data && a.data != c.data);
  bool inRange = true;
  double sum = 0;
  for (int i = 0; i < 1000; ++i) {
    float v = a.as<float>()[i];
    inRange = inRange && v >= -1.0f && v < 1.0f;
    sum += v;
  }
  CHECK(inRange && std::fabs(sum / 1000) < 0.1);
  Tensor ints = Tensor::zeros(DType::i64, {1000});
  fillRandom(ints, 3, 10);
  bool intsInRange = true, sawNine = false;
  for (int i = 0; i < 1000; ++i) {
    intsInRange =
        intsInRange && ints.as<int64_t>()[i] >= 0 && ints.as<int64_t>()[i] < 10;
    sawNine = sawNine || ints.as<int64_t>()[i] == 9;
  }
  CHECK(intsInRange && sawNine);
  Tensor bools = Tensor::zeros(DType::i1, {100});
  fillRandom(bools, 4, 0);
  int ones = 0;
  for (uint8_t v : bools.data)
    ones += v == 1 ? 1 : (v == 0 ? 0 : 1000);
  CHECK(ones > 20 && ones < 80);
}

void testHalf() {
  CHECK(floatToHalf(1.0f) == 0x3c00 && halfToFloat(0x3c00) == 1.0f);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff && floatToHalf(65520.0f) == 0x7c00);
  CHECK(floatToHalf(1e-8f) == 0 && floatToHalf(5.9604645e-8f) == 1);
  CHECK(floatToHalf(INFINITY) == 0x7c00 &&
        std::isnan(halfToFloat(floatToHalf(NAN))));
  // Ties round to even: 1 + 2^-11 lies between 1 and 1 + 2^-10.
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  bool roundTrips = true;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
      continue; // NaN
    roundTrips = roundTrips && floatToHalf(halfToFloat(uint16_t(h))) == h;
  }
  CHECK(roundTrips);
  CHECK(floatToBf16(1.0f) == 0x3f80 && bf16ToFloat(0x3f80) == 1.0f);
  CHECK(floatToBf16(1.00390625f) == 0x3f80); // tie to even
  CHECK(floatToBf16(1.01171875f) == 0x3f82);
}

} // namespace

void runTensorTests() {
  testDescribe();
  testNpyRoundTrip();
  testNpyFiles();
  testFillRandom();
  testHalf();
}

} // namespace memfit::rt::test
