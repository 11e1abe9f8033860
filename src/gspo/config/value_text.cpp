#include "gspo/config/value_text.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>

namespace gspo::config {

std::string value_text(int64_t v) { return std::to_string(v); }

std::string value_text(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  // Keep it a YAML float-looking scalar so it reads back as a number either way.
  return s;
}

std::string value_text(bool v) { return v ? "true" : "false"; }

std::string value_text(const std::string& v) { return nlohmann::json(v).dump(); }

std::string value_text(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + value_text(v[i]);
  return s + "]";
}

std::string value_text(const JsonObject& v) { return v.json; }

std::string clip_for_message(const std::string& text) {
  if (text.size() <= 120) return text;
  return text.substr(0, 100) + "... (" + std::to_string(text.size()) + " characters)";
}

const char* type_name(int64_t) { return "int"; }
const char* type_name(double) { return "float"; }
const char* type_name(bool) { return "bool"; }
const char* type_name(const std::string&) { return "string"; }
const char* type_name(const std::vector<std::string>&) { return "list of strings"; }
const char* type_name(const JsonObject&) { return "map"; }

std::string describe_default_clip(bool high) {
  auto text = [&](LossKind k) { return value_text(high ? default_clip(k).high : default_clip(k).low); };
  return "gspo " + text(LossKind::kGspo) + ", grpo " + text(LossKind::kGrpo);
}

}  // namespace gspo::config
