//===- GlobList.cpp - a list of name patterns ----------------------------===//

#include "memfit/Support/GlobList.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

using namespace mlir::memfit;

bool GlobList::parse(llvm::ArrayRef<std::string> patterns,
                     llvm::StringRef option, std::string &error) {
  for (const std::string &text : patterns) {
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(text);
    if (!glob) {
      error = ("bad " + option + " pattern '" + text +
               "': " + llvm::toString(glob.takeError()))
                  .str();
      return false;
    }
    globs.push_back(std::move(*glob));
  }
  return true;
}

bool GlobList::match(llvm::StringRef name) const {
  return llvm::any_of(
      globs, [&](const llvm::GlobPattern &glob) { return glob.match(name); });
}
