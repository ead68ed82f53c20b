//===- Bytes.cpp - byte counts as people write and read them ---------------===//

#include "memfit/runtime/Bytes.h"

#include <cctype>
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
  double number = std::strtod(text.substr(0, digits).c_str(), nullptr);
  std::string unit = trimmed(text.substr(digits));
  static const struct {
    const char *names[3];
    double scale;
  } units[] = {
      {{"", "b", nullptr}, 1.0},
      {{"kib", "k", nullptr}, 1024.0},
      {{"mib", "m", nullptr}, 1024.0 * 1024},
      {{"gib", "g", nullptr}, 1024.0 * 1024 * 1024},
      {{"tib", "t", nullptr}, 1024.0 * 1024 * 1024 * 1024},
      {{"kb", nullptr, nullptr}, 1e3},
      {{"mb", nullptr, nullptr}, 1e6},
      {{"gb", nullptr, nullptr}, 1e9},
      {{"tb", nullptr, nullptr}, 1e12},
  };
  for (const auto &u : units)
    for (const char *name : u.names) {
      if (!name || !equalsIgnoringCase(unit, name))
        continue;
      double bytes = std::round(number * u.scale);
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
