//===- BytesTest.cpp - byte counts parsed and printed ---------------------===//

#include "TestUtil.h"

#include "memfit/runtime/Bytes.h"

namespace memfit::rt::test {

namespace {

void testParse() {
  struct Case {
    const char *text;
    int64_t bytes;
  } good[] = {
      {"0", 0},
      {"123456", 123456},
      {" 42 ", 42},
      {"42B", 42},
      {"512MiB", 512ll << 20},
      {"512 mib", 512ll << 20},
      {"1.5GiB", 3ll << 29},
      {"1.2MiB", 1258291},   // 1258291.2, rounded
      {"800MB", 800000000},
      {"2k", 2048},
      {"3TB", 3000000000000ll},
      {"0.5KiB", 512},
      {".5KiB", 512},
      {"9223372036854775807", INT64_MAX}, // exact, not through a double
      {"8388607TiB", 8388607ll << 40},
  };
  for (const Case &c : good) {
    std::optional<int64_t> bytes = parseBytes(c.text);
    if (!CHECK(bytes.has_value()))
      continue;
    CHECK(*bytes == c.bytes);
  }
  const char *bad[] = {
      "", "MiB", "-1", "-1KiB", "1.2.3", "12parsecs", "1e3", "inf", "nan",
      "0x10", "1 Mi B", "9223372036854775808", "8388608TiB",
      "9300000000000000000.5",
  };
  for (const char *text : bad)
    CHECK(!parseBytes(text).has_value());
}

void testFormat() {
  CHECK(formatBytes(0) == "0 B");
  CHECK(formatBytes(744) == "744 B");
  CHECK(formatBytes(1024) == "1.00 KiB");
  CHECK(formatBytes(1258291) == "1.20 MiB");
  CHECK(formatBytes(3ll << 29) == "1.50 GiB");
  CHECK(formatBytes(5ll << 40) == "5.00 TiB");
  CHECK(formatBytes(-2048) == "-2.00 KiB");
  CHECK(groupDigits(0) == "0");
  CHECK(groupDigits(999) == "999");
  CHECK(groupDigits(1250048) == "1,250,048");
  CHECK(groupDigits(-1250048) == "-1,250,048");
  CHECK(formatBytesExact(744) == "744 bytes");
  CHECK(formatBytesExact(3221225472ll) == "3,221,225,472 bytes (3.00 GiB)");
  // What formatBytes prints parses back to within its rounding.
  std::optional<int64_t> back = parseBytes(formatBytes(1258291));
  CHECK(back && *back / 1024 == 1258291 / 1024);
}

} // namespace

void runBytesTests() {
  testParse();
  testFormat();
}

} // namespace memfit::rt::test
