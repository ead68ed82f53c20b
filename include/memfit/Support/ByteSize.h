//===- ByteSize.h - a byte count as a command-line or pass option -*- C++ -*-===//
//
// A pass or pipeline option of type ByteSize reads what a user types
// ("600KiB", "1.5GiB", "1258291") with memfit::parseBytes (the runtime's
// one parser, memfit/runtime/Bytes.h) and holds a plain number of bytes from
// then on; it prints as that number, so a printed pipeline parses back to
// the same value.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_SUPPORT_BYTESIZE_H
#define MEMFIT_SUPPORT_BYTESIZE_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace mlir::memfit {

struct ByteSize {
  int64_t bytes = 0;

  bool operator==(const ByteSize &other) const { return bytes == other.bytes; }
  bool operator!=(const ByteSize &other) const { return bytes != other.bytes; }
};

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ByteSize size) {
  return os << size.bytes;
}

} // namespace mlir::memfit

namespace llvm::cl {

/// Parses "512MiB", "1.5GiB", "800MB" or a plain count of bytes.
template <>
class parser<mlir::memfit::ByteSize> : public basic_parser<mlir::memfit::ByteSize> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true on error, after reporting it through the option.
  bool parse(Option &option, StringRef argName, StringRef arg,
             mlir::memfit::ByteSize &value);

  StringRef getValueName() const override { return "size"; }

  void printOptionDiff(const Option &option, mlir::memfit::ByteSize value,
                       const OptVal &defaultValue, size_t globalWidth) const;

  static void print(raw_ostream &os, mlir::memfit::ByteSize value) { os << value; }
};

} // namespace llvm::cl

#endif // MEMFIT_SUPPORT_BYTESIZE_H
