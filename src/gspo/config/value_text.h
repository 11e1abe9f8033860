// Renders option values as YAML scalars/lists (used in messages, `gspo config` and docs). Doubles use the
// shortest text that reads back to the same value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/choices.h"

namespace gspo::config {

std::string value_text(int64_t v);
std::string value_text(double v);
std::string value_text(bool v);
std::string value_text(const std::string& v);   // double-quoted, JSON escapes (valid YAML)
std::string value_text(const std::vector<std::string>& v);
template <class E, std::enable_if_t<IsChoice<E>::value, int> = 0>
std::string value_text(E v) { return value_text(std::string(name_of(v))); }  // written as its name

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
template <class E, std::enable_if_t<IsChoice<E>::value, int> = 0>
const char* type_name(const E&) { return "string"; }

}  // namespace gspo::config
