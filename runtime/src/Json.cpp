//===- Json.cpp - a small JSON value, parser and writer -------------------===//

#include "Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memfit::rt {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

JsonValue JsonValue::fromFloat(float value) {
  if (!std::isfinite(value))
    return JsonValue(static_cast<double>(value));
  char text[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits,
                  static_cast<double>(value));
    double parsed = std::strtod(text, nullptr);
    if (static_cast<float>(parsed) == value)
      return JsonValue(parsed);
  }
  return JsonValue(static_cast<double>(value));
}

void JsonValue::set(const std::string &key, JsonValue value) {
  for (Member &member : members_) {
    if (member.first == key) {
      member.second = std::move(value);
      return;
    }
  }
  members_.emplace_back(key, std::move(value));
}

const JsonValue *JsonValue::find(const std::string &key) const {
  for (const Member &member : members_)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Int:
    return "an integer";
  case Kind::Double:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

/// Recursive descent over the text; the first error stops it.
class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  StatusOr<JsonValue> parseDocument() {
    JsonValue value;
    if (!parseValue(value, 0))
      return error_;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the JSON value");
    return value;
  }

private:
  static constexpr int kMaxDepth = 256;

  Status fail(const std::string &message) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_ = invalidArgument(std::to_string(line) + ":" +
                             std::to_string(column) + ": " + message);
    return error_;
  }

  bool failed(const std::string &message) {
    (void)fail(message);
    return false;
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool atEnd() const { return pos_ >= text_.size(); }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    skipSpace();
    if (atEnd())
      return failed("unexpected end of input, expected a value");
    if (depth > kMaxDepth)
      return failed("nesting deeper than 256 levels");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      std::string s;
      if (!parseString(s))
        return false;
      out = JsonValue(std::move(s));
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (consumeWord("true")) {
      out = JsonValue(true);
      return true;
    }
    if (consumeWord("false")) {
      out = JsonValue(false);
      return true;
    }
    if (consumeWord("null")) {
      out = JsonValue();
      return true;
    }
    return failed(std::string("unexpected character '") + c + "'");
  }

  bool parseObject(JsonValue &out, int depth) {
    out = JsonValue::object();
    ++pos_; // '{'
    skipSpace();
    if (!atEnd() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      if (atEnd() || text_[pos_] != '"')
        return failed("expected a string key");
      size_t keyStart = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      if (out.find(key)) {
        pos_ = keyStart;
        return failed("duplicate key '" + key + "'");
      }
      skipSpace();
      if (atEnd() || text_[pos_] != ':')
        return failed("expected ':' after key '" + key + "'");
      ++pos_;
      JsonValue value;
      if (!parseValue(value, depth + 1))
        return false;
      out.set(key, std::move(value));
      skipSpace();
      if (atEnd())
        return failed("unexpected end of input in an object");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return failed("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out = JsonValue::array();
    ++pos_; // '['
    skipSpace();
    if (!atEnd() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      JsonValue value;
      if (!parseValue(value, depth + 1))
        return false;
      out.push(std::move(value));
      skipSpace();
      if (atEnd())
        return failed("unexpected end of input in an array");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return failed("expected ',' or ']' in an array");
    }
  }

  bool parseHex4(uint32_t &out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (atEnd())
        return failed("unexpected end of input in a \\u escape");
      char c = text_[pos_];
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return failed("invalid hex digit in a \\u escape");
      out = out * 16 + digit;
    }
    return true;
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd())
        return failed("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return failed("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (atEnd())
        return failed("unterminated string");
      char e = text_[pos_];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        ++pos_;
        break;
      case 'b':
        out += '\b';
        ++pos_;
        break;
      case 'f':
        out += '\f';
        ++pos_;
        break;
      case 'n':
        out += '\n';
        ++pos_;
        break;
      case 'r':
        out += '\r';
        ++pos_;
        break;
      case 't':
        out += '\t';
        ++pos_;
        break;
      case 'u': {
        ++pos_;
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
          // A high surrogate must be followed by a low one.
          uint32_t low;
          if (text_.compare(pos_, 2, "\\u") != 0)
            return failed("unpaired surrogate in a \\u escape");
          pos_ += 2;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low >= 0xE000)
            return failed("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return failed("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return failed(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-')
      ++pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (!atEnd() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ > first;
    };
    if (!atEnd() && text_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return failed("expected digits in a number");
    }
    if (!atEnd() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digits())
        return failed("expected digits after '.' in a number");
    }
    if (!atEnd() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (!atEnd() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (!digits())
        return failed("expected digits in the exponent of a number");
    }
    std::string literal = text_.substr(start, pos_ - start);
    if (integral) {
      errno = 0;
      long long v = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno != ERANGE) {
        out = JsonValue(static_cast<int64_t>(v));
        return true;
      }
    }
    errno = 0;
    double d = std::strtod(literal.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(d)) {
      pos_ = start;
      return failed("number out of range");
    }
    out = JsonValue(d);
    return true;
  }

  const std::string &text_;
  size_t pos_ = 0;
  Status error_;
};

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void writeString(std::string &out, const std::string &s) {
  out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void writeDouble(std::string &out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char text[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, d);
    if (std::strtod(text, nullptr) == d)
      break;
  }
  out += text;
  // Keep it a double when read back.
  if (!std::strpbrk(text, ".eE"))
    out += ".0";
}

bool isScalar(const JsonValue &v) { return !v.isArray() && !v.isObject(); }

void writeValue(std::string &out, const JsonValue &v, int indent) {
  auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(level) * 2, ' ');
  };
  switch (v.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += v.asBool() ? "true" : "false";
    return;
  case JsonValue::Kind::Int:
    out += std::to_string(v.asInt());
    return;
  case JsonValue::Kind::Double:
    writeDouble(out, v.asDouble());
    return;
  case JsonValue::Kind::String:
    writeString(out, v.asString());
    return;
  case JsonValue::Kind::Array: {
    const auto &elements = v.elements();
    bool flat = true;
    for (const JsonValue &e : elements)
      flat = flat && isScalar(e) && !e.isString();
    out += '[';
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i)
        out += flat ? ", " : ",";
      if (!flat)
        newline(indent + 1);
      writeValue(out, elements[i], indent + 1);
    }
    if (!flat && !elements.empty())
      newline(indent);
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    const auto &members = v.members();
    out += '{';
    for (size_t i = 0; i < members.size(); ++i) {
      if (i)
        out += ',';
      newline(indent + 1);
      writeString(out, members[i].first);
      out += ": ";
      writeValue(out, members[i].second, indent + 1);
    }
    if (!members.empty())
      newline(indent);
    out += '}';
    return;
  }
  }
}

} // namespace

StatusOr<JsonValue> parseJson(const std::string &text) {
  return Parser(text).parseDocument();
}

std::string writeJson(const JsonValue &value) {
  std::string out;
  writeValue(out, value, 0);
  out += '\n';
  return out;
}

} // namespace memfit::rt
