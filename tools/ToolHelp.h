//===- ToolHelp.h - --help that lists a tool's own options ------*- C++ -*-===//
//
// The tools link LLVM and MLIR libraries that register hundreds of options
// of their own (targets, debug counters, ...). A tool lists its options in
// categories by topic and hides the rest from --help; --help-hidden still
// lists everything.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_TOOLS_TOOLHELP_H
#define MEMFIT_TOOLS_TOOLHELP_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"

namespace memfit::tools {

/// Hides from --help every registered option outside `categories` and
/// LLVM's generic ones (--help, --version), as cl::HideUnrelatedOptions
/// does, but as cl::Hidden rather than ReallyHidden, so that --help-hidden
/// still lists them. Call it once every option is registered, before
/// cl::ParseCommandLineOptions.
inline void showOnlyCategories(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories) {
  llvm::SmallVector<llvm::cl::Option *> listed;
  for (auto &entry : llvm::cl::getRegisteredOptions())
    if (entry.second->getOptionHiddenFlag() != llvm::cl::ReallyHidden)
      listed.push_back(entry.second);
  llvm::cl::HideUnrelatedOptions(categories);
  for (llvm::cl::Option *option : listed)
    if (option->getOptionHiddenFlag() == llvm::cl::ReallyHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
}

} // namespace memfit::tools

#endif // MEMFIT_TOOLS_TOOLHELP_H
