#include "gspo/tokenizer/chat_tools.h"

#include <charconv>
#include <cmath>

#include "gspo/config/options.h"
#include "gspo/core/error.h"

namespace gspo::tokenizer {
namespace {
using nlohmann::ordered_json;


// A JSON string as json.dumps(ensure_ascii=False) writes it; nlohmann escapes the same set (", \, control
// characters with the short forms \b \f \n \r \t, else lowercase \u00XX) and keeps the rest as UTF-8.
std::string json_string(const std::string& s) {
  return ordered_json(s).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

void dump(const ordered_json& v, std::string& out) {
  switch (v.type()) {
    case ordered_json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += json_string(it.key());
        out += ": ";
        dump(it.value(), out);
      }
      out += '}';
      return;
    }
    case ordered_json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        dump(v[i], out);
      }
      out += ']';
      return;
    }
    case ordered_json::value_t::string: out += json_string(v.get_ref<const std::string&>()); return;
    case ordered_json::value_t::number_float: {  // json.dumps' spelling of the non-finite ones
      const double d = v.get<double>();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : python_float_repr(d);
      return;
    }
    default: out += v.dump(); return;  // null, true, false, integers
  }
}

void check_tool_format(config::ChatTemplate format, const char* what) {
  if (format != config::ChatTemplate::kChatml && format != config::ChatTemplate::kQwen25)
    throw DataError(std::string(what) + ": chat_template " + std::string(config::name_of(format)) +
                    " has no tool format in gspo (chatml and qwen2.5 have)");
}

}  // namespace

const std::pair<const std::string, int64_t>* special_at(const Tokenizer& tok, const std::string& text, size_t pos) {
  const std::pair<const std::string, int64_t>* best = nullptr;
  for (const auto& entry : tok.special_tokens())
    if (!entry.first.empty() && text.compare(pos, entry.first.size(), entry.first) == 0 &&
        (!best || entry.first.size() > best->first.size()))
      best = &entry;
  return best;
}

// Python's repr of a float: the shortest digits that read back, in fixed notation unless the decimal exponent is
// below -4 or at least 16 (float_repr_style "short").
std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);  // shortest: -d.ddde+XX
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  const int exp10 = std::stoi(sci.substr(e + 1));
  std::string digits = sci.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  const int k = static_cast<int>(digits.size()), decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  if (decpt <= -4 || decpt > 16) {
    std::string mant = digits.substr(0, 1) + (k > 1 ? "." + digits.substr(1) : "");
    const std::string ex = std::to_string(std::abs(exp10));
    return sign + mant + "e" + (exp10 < 0 ? "-" : "+") + (ex.size() < 2 ? "0" : "") + ex;
  }
  if (decpt <= 0) return sign + "0." + std::string(-decpt, '0') + digits;
  if (decpt >= k) return sign + digits + std::string(decpt - k, '0') + ".0";
  return sign + digits.substr(0, decpt) + "." + digits.substr(decpt);
}

std::string tojson(const nlohmann::ordered_json& v) {
  std::string out;
  dump(v, out);
  return out;
}

nlohmann::ordered_json tool_json(const ChatTool& tool) {
  ordered_json function = ordered_json::object();
  function["name"] = tool.name;
  function["description"] = tool.description;
  function["parameters"] = tool.parameters;
  ordered_json j = ordered_json::object();
  j["type"] = "function";
  j["function"] = std::move(function);
  return j;
}

std::vector<ChatTool> chat_tools(const std::vector<config::ToolSpec>& specs) {
  std::vector<ChatTool> tools;
  for (const auto& s : specs) {
    ordered_json params = ordered_json::parse(s.parameters.json, nullptr, false);
    if (params.is_discarded() || !params.is_object())
      throw DataError("tool '" + s.name + "': parameters are not a JSON object: " + s.parameters.json.substr(0, 200));
    tools.push_back({s.name, s.description, std::move(params)});
  }
  return tools;
}

std::string tools_section(const std::vector<ChatTool>& tools) {
  std::string out =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>";
  for (const auto& t : tools) out += "\n" + tojson(tool_json(t));
  out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
         "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
         "<args-json-object>}\n</tool_call>";
  return out;
}

std::string tool_calls_text(config::ChatTemplate format, const std::vector<ChatToolCall>& calls, bool newline_first) {
  check_tool_format(format, "tool calls");
  std::string out;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0 || newline_first) out += "\n";
    const auto& args = calls[i].arguments;
    const bool as_is = format == config::ChatTemplate::kChatml && args.is_string();
    out += "<tool_call>\n{\"name\": \"" + calls[i].name + "\", \"arguments\": " +
           (as_is ? args.get<std::string>() : tojson(args)) + "}\n</tool_call>";
  }
  return out;
}

namespace {
// tool_turn_text() as parts: (text, true) the template's own, (output, false) a tool's.
std::vector<std::pair<std::string, bool>> tool_turn_parts(config::ChatTemplate format,
                                                         const std::vector<std::string>& outputs,
                                                         const ChatOptions& opts) {
  check_tool_format(format, "tool turn");
  if (outputs.empty()) throw DataError("tool turn: no tool output (a tool turn holds one response per call)");
  std::vector<std::pair<std::string, bool>> parts;
  std::string templ = "\n<|im_start|>user";
  for (const auto& o : outputs) {
    parts.push_back({templ + "\n<tool_response>\n", true});
    parts.push_back({o, false});
    templ = "\n</tool_response>";
  }
  templ += "<|im_end|>\n";
  if (opts.add_generation_prompt) {
    templ += "<|im_start|>assistant\n";
    if (format == config::ChatTemplate::kChatml && !opts.enable_thinking) templ += "<think>\n\n</think>\n\n";
  }
  parts.push_back({templ, true});
  return parts;
}
}  // namespace

std::string tool_turn_text(config::ChatTemplate format, const std::vector<std::string>& outputs,
                           const ChatOptions& opts) {
  std::string out;
  for (const auto& part : tool_turn_parts(format, outputs, opts)) out += part.first;
  return out;
}

std::vector<int64_t> encode_parts(const Tokenizer& tok, const std::vector<std::pair<std::string, bool>>& parts) {
  std::vector<int64_t> ids;
  std::string span;  // text since the last special token: encoded plain in one piece
  auto flush = [&] {
    const auto plain = tok.encode_text(span);
    ids.insert(ids.end(), plain.begin(), plain.end());
    span.clear();
  };
  for (const auto& [text, trusted] : parts) {
    if (!trusted) {
      span += text;
      continue;
    }
    for (size_t i = 0; i < text.size();) {
      if (const auto* special = special_at(tok, text, i)) {
        flush();
        ids.push_back(special->second);
        i += special->first.size();
      } else {
        span += text[i++];
      }
    }
  }
  flush();
  return ids;
}

std::vector<int64_t> tool_turn_ids(config::ChatTemplate format, const Tokenizer& tok,
                                   const std::vector<std::string>& outputs, const ChatOptions& opts) {
  return encode_parts(tok, tool_turn_parts(format, outputs, opts));  // special tokens in the template's text only
}

}  // namespace gspo::tokenizer
