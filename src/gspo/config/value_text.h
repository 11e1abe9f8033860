// Renders option values as YAML scalars/lists (used in messages, `gspo config` and docs). Doubles use the
// shortest text that reads back to the same value.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gspo/config/choices.h"

namespace gspo::config {

// An option holding a JSON object (a tool's JSON-schema parameters): written in YAML as a mapping, kept as compact
// JSON text with the keys in the YAML's order, printed as JSON (valid YAML flow).
struct JsonObject {
  std::string json = "{}";
  bool operator==(const JsonObject& o) const { return json == o.json; }
};

// A record: a struct with its own visit() table (options.h), listed in an option as a YAML list of mappings
// (tools.list). Specialised true for each record type.
template <class T>
struct IsRecord : std::false_type {};
template <class T>
struct IsRecordList : std::false_type {};
template <class R>
struct IsRecordList<std::vector<R>> : IsRecord<R> {};
// A record that a plain string may stand for in its list (eval.datasets: the path): it has set_shorthand(text).
template <class R, class = void>
struct HasShorthand : std::false_type {};
template <class R>
struct HasShorthand<R, std::void_t<decltype(std::declval<R&>().set_shorthand(std::string()))>> : std::true_type {};

std::string value_text(int64_t v);
std::string value_text(double v);
std::string value_text(bool v);
std::string value_text(const std::string& v);   // double-quoted, JSON escapes (valid YAML)
std::string value_text(const std::vector<std::string>& v);
std::string value_text(const JsonObject& v);
template <class E, std::enable_if_t<IsChoice<E>::value, int> = 0>
std::string value_text(E v) { return value_text(std::string(name_of(v))); }  // written as its name
// A list of records as a YAML flow sequence of flow mappings, every field present: [{name: "x", kind: "python"}].
template <class R, std::enable_if_t<IsRecord<R>::value, int> = 0>
std::string value_text(const std::vector<R>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    R r = v[i];
    std::string fields;
    r.visit([&](const char* key, const auto& field, const char*, const auto&) {
      fields += (fields.empty() ? "" : ", ") + std::string(key) + ": " + value_text(field);
    });
    s += (i ? ", {" : "{") + fields + "}";
  }
  return s + "]";
}

// algorithm.clip_low / clip_high's defaults per loss as the option docs state them, written as value_text writes
// numbers: "gspo 0.0003, grpo 0.2" (or the high bounds; default_clip, choices.h).
std::string describe_default_clip(bool high);

// A value as error messages show it: value_text, cut to about 100 characters with the full length said, so a
// multi-megabyte value does not flood the terminal.
std::string clip_for_message(const std::string& text);
template <class T>
std::string value_preview(const T& v) { return clip_for_message(value_text(v)); }

const char* type_name(int64_t);
const char* type_name(double);
const char* type_name(bool);
const char* type_name(const std::string&);
const char* type_name(const std::vector<std::string>&);
const char* type_name(const JsonObject&);
template <class R, std::enable_if_t<IsRecord<R>::value, int> = 0>
const char* type_name(const std::vector<R>&) { return "list of maps"; }
template <class E, std::enable_if_t<IsChoice<E>::value, int> = 0>
const char* type_name(const E&) { return "string"; }

}  // namespace gspo::config
