//===- Bytes.cpp - byte counts as people write and read them ---------------===//

#include "memfit/runtime/Bytes.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memfit {

namespace {

bool equalsIgnoringCase(const std::string &a, const char *b) {
  size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return i == a.size() && !b[i];
}

std::string trimmed(const std::string &text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
    ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  return text.substr(begin, end - begin);
}

} // namespace

std::optional<int64_t> parseBytes(const std::string &input) {
  std::string text = trimmed(input);
  size_t digits = 0;
  bool sawDigit = false, sawPoint = false;
  for (; digits < text.size(); ++digits) {
    char c = text[digits];
    if (std::isdigit(static_cast<unsigned char>(c)))
      sawDigit = true;
    else if (c == '.' && !sawPoint)
      sawPoint = true;
    else
      break;
  }
  if (!sawDigit)
    return std::nullopt;
  std::string number = text.substr(0, digits);
  std::string unit = trimmed(text.substr(digits));
  static const struct {
    const char *names[3];
    int64_t scale;
  } units[] = {
      {{"", "b", nullptr}, 1},
      {{"kib", "k", nullptr}, int64_t(1) << 10},
      {{"mib", "m", nullptr}, int64_t(1) << 20},
      {{"gib", "g", nullptr}, int64_t(1) << 30},
      {{"tib", "t", nullptr}, int64_t(1) << 40},
      {{"kb", nullptr, nullptr}, 1000},
      {{"mb", nullptr, nullptr}, 1000 * 1000},
      {{"gb", nullptr, nullptr}, 1000 * 1000 * 1000},
      {{"tb", nullptr, nullptr}, int64_t(1000) * 1000 * 1000 * 1000},
  };
  for (const auto &u : units)
    for (const char *name : u.names) {
      if (!name || !equalsIgnoringCase(unit, name))
        continue;
      const char *first = number.data(), *last = first + number.size();
      if (!sawPoint) {
        // Whole numbers stay exact up to INT64_MAX.
        int64_t count = 0, bytes = 0;
        auto [end, ec] = std::from_chars(first, last, count);
        if (ec != std::errc() || end != last ||
            __builtin_mul_overflow(count, u.scale, &bytes))
          return std::nullopt;
        return bytes;
      }
      // Fractions through double, without the locale's decimal point.
      double value = 0;
      auto [end, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || end != last)
        return std::nullopt;
      double bytes = std::round(value * static_cast<double>(u.scale));
      // 2^63 is exactly representable; anything at or above it overflows.
      if (!(bytes < 9223372036854775808.0))
        return std::nullopt;
      return static_cast<int64_t>(bytes);
    }
  return std::nullopt;
}

std::string formatBytes(int64_t bytes) {
  static const char *names[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  if (std::abs(value) < 1024)
    return std::to_string(bytes) + " B";
  int unit = -1;
  while (std::abs(value) >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof(text), "%.2f %s", value, names[unit]);
  return text;
}

std::string groupDigits(int64_t value) {
  std::string digits = std::to_string(value);
  size_t first = digits[0] == '-' ? 1 : 0;
  for (int i = static_cast<int>(digits.size()) - 3; i > static_cast<int>(first);
       i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

std::string formatBytesExact(int64_t bytes) {
  if (bytes > -1024 && bytes < 1024)
    return std::to_string(bytes) + " bytes";
  return groupDigits(bytes) + " bytes (" + formatBytes(bytes) + ")";
}

} // namespace memfit
