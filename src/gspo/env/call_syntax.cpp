#include "gspo/env/call_syntax.h"

namespace gspo::env {
namespace {

constexpr const char* kPythonTag = "<|python_tag|>";
constexpr const char* kMistralCalls = "[TOOL_CALLS]";
constexpr const char* kMistralArgs = "[ARGS]";
constexpr const char* kMistralCallId = "[CALL_ID]";

std::string lstrip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b);
}

ToolCall failure(std::string why) {
  ToolCall c;
  c.error = std::move(why);
  return c;
}

// A JSON array of call objects (Mistral v3): one call per element, or one failure for the whole.
std::vector<ToolCall> json_array_calls(const std::string& body) {
  if (body.size() > kMaxCallBytes) return {failure("tool calls of " + std::to_string(body.size()) + " bytes")};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const std::exception&) {
    return {parse_call_json(body)};  // not an array: whatever it is, read as one call (saying why it is none)
  }
  if (!j.is_array()) return {parse_call_json(body)};
  if (j.empty()) return {failure("[TOOL_CALLS] with an empty list of calls")};
  std::vector<ToolCall> calls;
  for (const auto& e : j) calls.push_back(parse_call_json(e.dump()));
  return calls;
}

// NAME[CALL_ID]ID[ARGS]{...} (Mistral Small 3.2 and later), [CALL_ID]ID optional.
ToolCall named_call(const std::string& block) {
  const size_t args = block.find(kMistralArgs);
  if (args == std::string::npos) return failure("[TOOL_CALLS] call without [ARGS] after its name");
  std::string name = block.substr(0, args), id;
  if (const size_t cid = name.find(kMistralCallId); cid != std::string::npos) {
    id = name.substr(cid + std::string(kMistralCallId).size());
    name = name.substr(0, cid);
  }
  name = lstrip(name);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\n')) name.pop_back();
  if (name.empty()) return failure("[TOOL_CALLS] call without a name");
  if (name.size() > 128) return failure("tool name longer than 128 bytes");
  const std::string arguments = block.substr(args + std::string(kMistralArgs).size());
  if (arguments.size() > kMaxCallBytes || !nlohmann::json::accept(arguments))
    return failure("the arguments after [ARGS] of tool '" + name.substr(0, 128) + "' are not one JSON value");
  // (one complete JSON value: nothing of it can reach outside "arguments")
  ToolCall c = parse_call_json("{\"name\": " + nlohmann::json(name).dump(-1, ' ', false,
                               nlohmann::json::error_handler_t::replace) + ", \"arguments\": " + arguments + "}");
  if (c.ok()) c.id = id.substr(0, 64);
  return c;
}

}  // namespace

const char* call_syntax_name(CallSyntax s) {
  switch (s) {
    case CallSyntax::kHermes: return "hermes";
    case CallSyntax::kLlama3Json: return "llama3_json";
    case CallSyntax::kMistral: return "mistral";
  }
  return "?";
}

std::optional<CallSyntax> detect_call_syntax(const std::string& source) {
  if (source.find(kMistralCalls) != std::string::npos) return CallSyntax::kMistral;
  if (source.find("<tool_call>") != std::string::npos) return CallSyntax::kHermes;
  if (source.find("\"parameters\": ") != std::string::npos && source.find("tool_calls") != std::string::npos &&
      (source.find("<|eot_id|>") != std::string::npos || source.find(kPythonTag) != std::string::npos))
    return CallSyntax::kLlama3Json;
  return std::nullopt;
}

std::vector<ToolCall> parse_llama3_calls(const std::string& turn) {
  std::string text = lstrip(turn);
  if (text.rfind(kPythonTag, 0) == 0) text = lstrip(text.substr(std::string(kPythonTag).size()));
  if (text.empty() || text.front() != '{') return {};  // an answer, not a call
  return {parse_call_json(text, {"parameters", "arguments"})};
}

std::vector<ToolCall> parse_mistral_calls(const std::string& turn) {
  const size_t first = turn.find(kMistralCalls);
  if (first == std::string::npos) return {};
  const size_t marker = std::string(kMistralCalls).size();
  const std::string rest = lstrip(turn.substr(first + marker));
  const std::string inner = rest.empty() ? "" : lstrip(rest.substr(1));
  if (!rest.empty() && rest.front() == '[' && (inner.empty() || inner.front() == '{' || inner.front() == ']'))
    return json_array_calls(rest);  // v3: a JSON list (not "[ARGS]" after an empty name)
  std::vector<ToolCall> calls;
  for (size_t at = first; at != std::string::npos;) {
    const size_t next = turn.find(kMistralCalls, at + marker);
    calls.push_back(named_call(turn.substr(at + marker, next == std::string::npos ? std::string::npos
                                                                                  : next - at - marker)));
    at = next;
  }
  return calls;
}

std::vector<ToolCall> parse_calls(CallSyntax s, const std::string& turn) {
  switch (s) {
    case CallSyntax::kHermes: return parse_tool_calls(turn);
    case CallSyntax::kLlama3Json: return parse_llama3_calls(turn);
    case CallSyntax::kMistral: return parse_mistral_calls(turn);
  }
  return {};
}

}  // namespace gspo::env
