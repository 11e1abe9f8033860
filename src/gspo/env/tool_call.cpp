#include "gspo/env/tool_call.h"

#include <algorithm>
#include <cstring>

namespace gspo::env {
namespace {

constexpr size_t kMaxNameBytes = 128;  // a longer name is no tool's

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Deepest nesting of objects and arrays outside strings: checked before parsing, so hostile nesting costs O(bytes).
int json_depth(const std::string& s) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

ToolCall failure(std::string why) {
  ToolCall c;
  c.error = std::move(why);
  return c;
}

ToolCall parse_body(const std::string& raw, const std::vector<std::string>& argument_keys) {
  const std::string body = trimmed(raw);
  if (body.empty()) return failure("empty tool call");
  if (body.size() > kMaxCallBytes)
    return failure("tool call of " + std::to_string(body.size()) + " bytes, more than " +
                   std::to_string(kMaxCallBytes));
  if (json_depth(body) > kMaxCallDepth)
    return failure("tool call nested deeper than " + std::to_string(kMaxCallDepth) + " levels");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    return failure("tool call is not valid JSON (" + why.substr(0, 160) + ")");
  }
  if (!j.is_object()) return failure(std::string("tool call must be a JSON object (got ") + j.type_name() + ")");
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return failure("tool call needs a \"name\" string");
  if (name->get_ref<const std::string&>().size() > kMaxNameBytes)
    return failure("tool name longer than " + std::to_string(kMaxNameBytes) + " bytes");
  ToolCall call;
  call.name = name->get<std::string>();
  for (const auto& key : argument_keys) {
    const auto args = j.find(key);
    if (args == j.end()) continue;
    if (!args->is_object())
      return failure("\"" + key + "\" of tool '" + call.name + "' must be a JSON object (got " + args->type_name() +
                     ")");
    call.arguments = *args;
    break;
  }
  if (const auto id = j.find("id"); id != j.end() && id->is_string()) call.id = id->get<std::string>().substr(0, 64);
  return call;
}

}  // namespace

std::vector<ToolCall> parse_tool_calls(const std::string& text) {
  std::vector<ToolCall> calls;
  const size_t open_len = std::strlen(kCallOpen), close_len = std::strlen(kCallClose);
  size_t pos = 0;
  while ((pos = text.find(kCallOpen, pos)) != std::string::npos) {
    const size_t body = pos + open_len;
    const size_t close = text.find(kCallClose, body);
    if (close == std::string::npos) {
      calls.push_back(failure("unterminated <tool_call> (no </tool_call> after it)"));
      break;
    }
    try {
      const std::string inner = text.substr(body, close - body);
      calls.push_back(inner.find(kCallOpen) != std::string::npos ? failure("nested <tool_call> inside a tool call")
                                                                 : parse_body(inner, {"arguments"}));
    } catch (const std::exception& e) {  // allocation or anything the JSON library did not foresee: still a failure
      calls.push_back(failure(std::string("tool call could not be read (") + e.what() + ")"));
    }
    pos = close + close_len;
  }
  return calls;
}

ToolCall parse_call_json(const std::string& body, const std::vector<std::string>& argument_keys) {
  try {
    return parse_body(body, argument_keys);
  } catch (const std::exception& e) {  // allocation or anything the JSON library did not foresee: still a failure
    return failure(std::string("tool call could not be read (") + e.what() + ")");
  }
}

}  // namespace gspo::env
