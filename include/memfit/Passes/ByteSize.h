//===- ByteSize.h - a byte count as a command-line or pass option -*- C++ -*-===//
//
// A pass or pipeline option of type memfit::ByteSize reads what a user
// types ("600KiB", "1.5GiB", "1258291") with memfit::parseBytes and holds a
// plain number of bytes from then on; it prints as that number, so a
// printed pipeline parses back to the same value.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_PASSES_BYTESIZE_H
#define MEMFIT_PASSES_BYTESIZE_H

#include "memfit/runtime/Bytes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace memfit {

struct ByteSize {
  int64_t bytes = 0;

  bool operator==(const ByteSize &other) const { return bytes == other.bytes; }
  bool operator!=(const ByteSize &other) const { return bytes != other.bytes; }
};

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ByteSize size) {
  return os << size.bytes;
}

} // namespace memfit

namespace llvm::cl {

/// Parses "512MiB", "1.5GiB", "800MB" or a plain count of bytes.
template <>
class parser<memfit::ByteSize> : public basic_parser<memfit::ByteSize> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true on error, after reporting it through the option.
  bool parse(Option &option, StringRef, StringRef arg,
             memfit::ByteSize &value) {
    std::optional<int64_t> bytes = memfit::parseBytes(arg.str());
    if (!bytes)
      return option.error("'" + arg +
                          "' is not a size: expected bytes, or a number with "
                          "a unit (512MiB, 1.5GiB, 800MB)");
    value.bytes = *bytes;
    return false;
  }

  StringRef getValueName() const override { return "size"; }

  void printOptionDiff(const Option &option, memfit::ByteSize value,
                       const OptVal &defaultValue, size_t globalWidth) const {
    printOptionName(option, globalWidth);
    outs() << "= " << value.bytes;
    if (defaultValue.hasValue())
      outs() << " (default: " << defaultValue.getValue().bytes << ")";
    outs() << "\n";
  }

  static void print(raw_ostream &os, memfit::ByteSize value) { os << value; }
};

} // namespace llvm::cl

#endif // MEMFIT_PASSES_BYTESIZE_H
