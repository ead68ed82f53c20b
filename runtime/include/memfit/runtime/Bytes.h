//===- Bytes.h - byte counts as people write and read them -------*- C++ -*-===//
//
// The one place where memfit turns "512MiB" into a number of bytes and a
// number of bytes back into text. The compiler, the runtime and the tools
// all use it, so a budget typed on a command line, printed in a report and
// parsed again agrees everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_BYTES_H
#define MEMFIT_RUNTIME_BYTES_H

#include <cstdint>
#include <optional>
#include <string>

namespace memfit {

/// Parses a size: a non-negative number followed by an optional unit, with
/// optional spaces between: B, KiB/K, MiB/M, GiB/G, TiB/T (powers of 1024),
/// KB, MB, GB, TB (powers of 1000), case-insensitive: "123456", "512MiB",
/// "1.5 GiB", "800MB". Fractions are rounded to the nearest byte. Returns
/// nothing for anything else, including negative numbers and sizes beyond
/// INT64_MAX.
std::optional<int64_t> parseBytes(const std::string &text);

/// The size in the unit that suits its magnitude, with two decimals above
/// 1 KiB: "744 B", "1.25 KiB", "512.00 MiB", "1.50 GiB".
std::string formatBytes(int64_t bytes);

/// Digits in groups of three: "1,250,048".
std::string groupDigits(int64_t value);

/// The exact count and the readable size: "1,250,048 bytes (1.19 MiB)";
/// below 1 KiB only "744 bytes".
std::string formatBytesExact(int64_t bytes);

} // namespace memfit

#endif // MEMFIT_RUNTIME_BYTES_H
