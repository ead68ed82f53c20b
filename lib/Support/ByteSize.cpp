//===- ByteSize.cpp - a byte count as a command-line or pass option
//--------===//

#include "memfit/Support/ByteSize.h"

#include "memfit/runtime/Bytes.h"

#include <cstdlib>

using namespace llvm;

bool cl::parser<mlir::memfit::ByteSize>::parse(Option &option, StringRef,
                                               StringRef arg,
                                               mlir::memfit::ByteSize &value) {
  std::optional<int64_t> bytes = ::memfit::parseBytes(arg.str());
  if (!bytes)
    return option.error("'" + arg +
                        "' is not a size: expected bytes, or a number with a "
                        "unit (512MiB, 1.5GiB, 800MB)");
  // A size that is not zero but rounds to no byte is a typo, not "none".
  if (*bytes == 0 && std::strtod(arg.str().c_str(), nullptr) != 0)
    return option.error("'" + arg + "' is less than one byte");
  value.bytes = *bytes;
  return false;
}

void cl::parser<mlir::memfit::ByteSize>::printOptionDiff(
    const Option &option, mlir::memfit::ByteSize value,
    const OptVal &defaultValue, size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= " << value.bytes;
  if (defaultValue.hasValue())
    outs() << " (default: " << defaultValue.getValue().bytes << ")";
  outs() << "\n";
}
