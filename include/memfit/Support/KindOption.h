//===- KindOption.h - the options' choices as llvm::cl values ----*- C++ -*-===//
//
// Makes each kind of OptionKinds.h an option type of llvm::cl, so that a
// pass option declared in Passes.td with the type `::memfit::LossKind`, a
// pipeline option and a tool's cl::opt<memfit::LossKind> all read what a
// user types with the one table of spellings, refuse anything else with
// "unknown loss 'foo'; expected output, cross-entropy or mse", and print a
// value back as its spelling (so a printed pipeline parses back).
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_SUPPORT_KINDOPTION_H
#define MEMFIT_SUPPORT_KINDOPTION_H

#include "memfit/Support/OptionKinds.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace memfit {

/// The llvm::cl parser of a kind: its spellings from kindNames<Kind>().
template <typename Kind>
class KindParser : public llvm::cl::basic_parser<Kind> {
public:
  KindParser(llvm::cl::Option &option) : llvm::cl::basic_parser<Kind>(option) {}

  /// Returns true on error, after reporting it through the option.
  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef arg,
             Kind &value) {
    if (std::optional<Kind> kind = parseKind<Kind>(arg.str())) {
      value = *kind;
      return false;
    }
    return option.error(unknownKind<Kind>(arg.str()));
  }

  llvm::StringRef getValueName() const override { return "value"; }

  void printOptionDiff(const llvm::cl::Option &option, Kind value,
                       const llvm::cl::OptionValue<Kind> &defaultValue,
                       size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << nameOf(value);
    if (defaultValue.hasValue())
      llvm::outs() << " (default: " << nameOf(defaultValue.getValue()) << ")";
    llvm::outs() << "\n";
  }

  static void print(llvm::raw_ostream &os, Kind value) { os << nameOf(value); }
};

} // namespace memfit

namespace llvm::cl {
template <>
class parser<memfit::LossKind> : public memfit::KindParser<memfit::LossKind> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::OptimizerKind>
    : public memfit::KindParser<memfit::OptimizerKind> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::RematPolicy>
    : public memfit::KindParser<memfit::RematPolicy> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::PrecisionKind>
    : public memfit::KindParser<memfit::PrecisionKind> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::StateStorage>
    : public memfit::KindParser<memfit::StateStorage> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::WeightStorage>
    : public memfit::KindParser<memfit::WeightStorage> {
public:
  using KindParser::KindParser;
};
template <>
class parser<memfit::ActivationStorage>
    : public memfit::KindParser<memfit::ActivationStorage> {
public:
  using KindParser::KindParser;
};
} // namespace llvm::cl

#endif // MEMFIT_SUPPORT_KINDOPTION_H
