//===- GlobList.h - a list of name patterns --------------------*- C++ -*-===//
//
// The glob patterns of pass options that select by name (`trainable`,
// `frozen`, `keep-fp32`): `*`, `?` and `[...]` as llvm::GlobPattern reads
// them. A name matches the list when it matches any pattern; an empty list
// matches nothing.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_SUPPORT_GLOBLIST_H
#define MEMFIT_SUPPORT_GLOBLIST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/GlobPattern.h"

#include <string>

namespace mlir::memfit {

class GlobList {
public:
  /// Compiles `patterns`; on a malformed one, returns false with
  /// "bad <option> pattern '<text>': <why>" in `error`.
  bool parse(llvm::ArrayRef<std::string> patterns, llvm::StringRef option,
             std::string &error);

  bool empty() const { return globs.empty(); }
  bool match(llvm::StringRef name) const;

private:
  llvm::SmallVector<llvm::GlobPattern> globs;
};

} // namespace mlir::memfit

#endif // MEMFIT_SUPPORT_GLOBLIST_H
