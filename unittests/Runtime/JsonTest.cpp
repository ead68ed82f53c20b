//===- JsonTest.cpp - the JSON parser and writer --------------------------===//

#include "TestUtil.h"

#include "Json.h"

namespace memfit::rt::test {

namespace {

void testParseValues() {
  StatusOr<JsonValue> v = parseJson(R"({
    "null": null, "yes": true, "no": false,
    "int": -42, "big": 9007199254740993, "huge": 123456789012345678901234,
    "double": 2.5e-3, "zero": 0, "negzero": -0.0,
    "text": "tab\there \"quoted\" back\\slash \u00e9 \ud83d\ude00 \/",
    "array": [1, [2, {}], []],
    "object": {"z": 1, "a": 2, "m": 3}
  })");
  if (!CHECK_OK(v.status()))
    return;
  const JsonValue &o = *v;
  CHECK(o.isObject() && o.members().size() == 12);
  CHECK(o.find("null")->isNull());
  CHECK(o.find("yes")->asBool() && !o.find("no")->asBool());
  CHECK(o.find("int")->isInt() && o.find("int")->asInt() == -42);
  CHECK(o.find("big")->isInt() && o.find("big")->asInt() == 9007199254740993LL);
  CHECK(o.find("huge")->kind() == JsonValue::Kind::Double);
  CHECK(o.find("double")->kind() == JsonValue::Kind::Double &&
        o.find("double")->asDouble() == 2.5e-3);
  CHECK(o.find("zero")->isInt());
  CHECK(o.find("negzero")->kind() == JsonValue::Kind::Double);
  CHECK(o.find("text")->asString() ==
        "tab\there \"quoted\" back\\slash \xc3\xa9 \xf0\x9f\x98\x80 /");
  CHECK(o.find("array")->elements().size() == 3 &&
        o.find("array")->elements()[1].elements()[1].isObject());
  // Insertion order is kept.
  const auto &members = o.find("object")->members();
  CHECK(members.size() == 3 && members[0].first == "z" &&
        members[1].first == "a" && members[2].first == "m");
  CHECK(o.find("missing") == nullptr);
}

void testRoundTrip() {
  JsonValue root = JsonValue::object();
  root.set("b", JsonValue(int64_t(-7)));
  root.set("a", JsonValue("line\nbreak \x01 control"));
  root.set("d", JsonValue(0.1));
  root.set("f", JsonValue::fromFloat(0.1f));
  root.set("whole", JsonValue(3.0));
  JsonValue list = JsonValue::array();
  list.push(JsonValue(1));
  list.push(JsonValue(2.5));
  list.push(JsonValue(true));
  root.set("list", list);
  JsonValue nested = JsonValue::array();
  nested.push(JsonValue::object());
  nested.push(list);
  root.set("nested", nested);
  root.set("b", JsonValue(int64_t(8))); // replaces, keeps the position

  std::string text = writeJson(root);
  CHECK(text.find("\"f\": 0.1,") != std::string::npos);
  CHECK(text.find("\"list\": [1, 2.5, true]") != std::string::npos);
  CHECK(text.find("\\u0001") != std::string::npos);
  StatusOr<JsonValue> back = parseJson(text);
  if (!CHECK_OK(back.status()))
    return;
  CHECK(writeJson(*back) == text);
  CHECK(back->members()[0].first == "b" && back->find("b")->asInt() == 8);
  CHECK(back->find("a")->asString() == "line\nbreak \x01 control");
  CHECK(back->find("d")->asDouble() == 0.1);
  CHECK(static_cast<float>(back->find("f")->asDouble()) == 0.1f);
  CHECK(back->find("whole")->kind() == JsonValue::Kind::Double &&
        back->find("whole")->asDouble() == 3.0);
}

void testErrors() {
  struct Case {
    const char *text;
    const char *error;
  } cases[] = {
      {"{\n  \"a\": 1,\n  \"b\": tru\n}", "3:8: unexpected character 't'"},
      {"[1, 2,]", "1:7: unexpected character ']'"},
      {"{\"a\": 1,}", "1:9: expected a string key"},
      {"{\"a\" 1}", "1:6: expected ':' after key 'a'"},
      {"{\"a\": 1, \"a\": 2}", "1:10: duplicate key 'a'"},
      {"\"abc", "1:5: unterminated string"},
      {"\"a\\qb\"", "1:4: invalid escape '\\q'"},
      {"\"\\ud800x\"", "unpaired surrogate"},
      {"[1 2]", "1:4: expected ',' or ']' in an array"},
      {"01", "1:2: unexpected text after the JSON value"},
      {"-", "1:2: expected digits in a number"},
      {"1.e5", "1:3: expected digits after '.'"},
      {"", "1:1: unexpected end of input"},
      {"{} x", "1:4: unexpected text after the JSON value"},
      {"\"a\nb\"", "1:3: control character in a string"},
      {"1e999", "1:1: number out of range"},
  };
  for (const Case &c : cases)
    CHECK_ERROR(parseJson(c.text).status(), c.error);
  std::string deep(300, '[');
  CHECK_ERROR(parseJson(deep).status(), "nesting deeper than 256 levels");
}

} // namespace

void runJsonTests() {
  testParseValues();
  testRoundTrip();
  testErrors();
}

} // namespace memfit::rt::test
