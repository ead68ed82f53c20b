//===- Json.h - a small JSON value, parser and writer (internal)
//
// Enough JSON for manifests: objects keep their insertion order, numbers are
// int64 when written without a fraction or exponent (and in range), else
// double. Parse errors give `line:column: message`.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_SRC_JSON_H
#define MEMFIT_RUNTIME_SRC_JSON_H

#include "memfit/runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memfit::rt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;
  JsonValue(bool b) : kind_(Kind::Bool), bool_(b) {}
  JsonValue(int v) : kind_(Kind::Int), int_(v) {}
  JsonValue(int64_t v) : kind_(Kind::Int), int_(v) {}
  JsonValue(uint32_t v) : kind_(Kind::Int), int_(v) {}
  /// Sizes and offsets; values above INT64_MAX do not occur in manifests.
  JsonValue(uint64_t v) : kind_(Kind::Int), int_(static_cast<int64_t>(v)) {}
  JsonValue(double v) : kind_(Kind::Double), double_(v) {}
  JsonValue(const char *s) : kind_(Kind::String), string_(s) {}
  JsonValue(std::string s) : kind_(Kind::String), string_(std::move(s)) {}

  static JsonValue array() { return JsonValue(Kind::Array); }
  static JsonValue object() { return JsonValue(Kind::Object); }
  /// A double written with the fewest digits that read back as `value`
  /// when parsed as a double and rounded to float.
  static JsonValue fromFloat(float value);

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isInt() const { return kind_ == Kind::Int; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Double; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool asBool() const { return bool_; }
  int64_t asInt() const { return int_; }
  /// Ints convert.
  double asDouble() const {
    return kind_ == Kind::Int ? static_cast<double>(int_) : double_;
  }
  const std::string &asString() const { return string_; }
  /// Elements of an array.
  const std::vector<JsonValue> &elements() const { return elements_; }
  /// Members of an object, in insertion order.
  const std::vector<Member> &members() const { return members_; }

  /// Appends to an array.
  void push(JsonValue value) { elements_.push_back(std::move(value)); }
  /// Adds (or replaces) a member of an object.
  void set(const std::string &key, JsonValue value);
  /// The member named `key`, or nullptr.
  const JsonValue *find(const std::string &key) const;

  /// "null", "a boolean", "an integer", ... for messages.
  static const char *kindName(Kind kind);

private:
  explicit JsonValue(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<JsonValue> elements_;
  std::vector<Member> members_;
};

/// Parses one JSON document; errors read `line:column: message`.
StatusOr<JsonValue> parseJson(const std::string &text);

/// Writes `value` with two-space indentation; arrays of numbers stay on
/// one line. Non-finite doubles (which JSON lacks) are written as null.
std::string writeJson(const JsonValue &value);

} // namespace memfit::rt

#endif // MEMFIT_RUNTIME_SRC_JSON_H
