#include "gspo/tokenizer/chat_template.h"

#include "gspo/core/error.h"
#include "gspo/tokenizer/chat_tools.h"

namespace gspo::tokenizer {
namespace {
const char* kQwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

void check_messages(config::ChatTemplate format, const std::vector<ChatMessage>& messages,
                    const std::vector<ChatTool>& tools) {
  const bool tool_format = format == config::ChatTemplate::kChatml || format == config::ChatTemplate::kQwen25;
  if (!tools.empty() && !tool_format)
    throw DataError(std::string("chat_template ") + config::name_of(format) + " has no tool format in gspo (tools are "
                    "rendered in chatml and qwen2.5)");
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const std::string at = "chat message " + std::to_string(i) + ": ";
    if (m.role == "tool" && !tool_format)
      throw DataError(at + "role tool needs a chat format with tools (chatml, qwen2.5; got " +
                      config::name_of(format) + ")");
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
      throw DataError(at + "role must be system, user, assistant or tool (got '" + m.role + "')");
    if (m.role == "system" && i != 0) throw DataError(at + "a system message must come first");
    if (!m.tool_calls.empty() && m.role != "assistant")
      throw DataError(at + "only an assistant message carries tool calls (got role '" + m.role + "')");
    if (!m.tool_calls.empty() && !tool_format)
      throw DataError(at + "tool calls need a chat format with tools (chatml, qwen2.5; got " +
                      config::name_of(format) + ")");
  }
}

// Python's str.split(sep)[-1] and [0].
std::string after_last(const std::string& s, const std::string& sep) {
  const size_t p = s.rfind(sep);
  return p == std::string::npos ? s : s.substr(p + sep.size());
}
std::string before_first(const std::string& s, const std::string& sep) { return s.substr(0, s.find(sep)); }
// Python's lstrip / rstrip / strip of newlines.
std::string lstrip_nl(const std::string& s) {
  const size_t p = s.find_first_not_of('\n');
  return p == std::string::npos ? "" : s.substr(p);
}
std::string rstrip_nl(const std::string& s) {
  const size_t p = s.find_last_not_of('\n');
  return p == std::string::npos ? "" : s.substr(0, p + 1);
}
bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Qwen3's assistant turn: the reasoning (the reasoning_content field, else the <think> block split off the content);
// shown only after the last user query, and an empty one only in the last message. Then the tool calls.
std::string qwen3_assistant(const ChatMessage& m, bool after_last_query, bool last) {
  std::string content = m.content, reasoning;
  if (m.reasoning_content) {
    reasoning = *m.reasoning_content;
  } else if (m.content.find("</think>") != std::string::npos) {
    content = lstrip_nl(after_last(m.content, "</think>"));
    reasoning = lstrip_nl(after_last(rstrip_nl(before_first(m.content, "</think>")), "<think>"));
  }
  std::string out = "<|im_start|>assistant\n";
  if (after_last_query && (last || !reasoning.empty()))
    out += "<think>\n" + lstrip_nl(rstrip_nl(reasoning)) + "\n</think>\n\n" + lstrip_nl(content);
  else
    out += content;
  return out + tool_calls_text(config::ChatTemplate::kChatml, m.tool_calls, !content.empty());
}

// Qwen2.5's assistant turn: the content, or with calls "<|im_start|>assistant" + "\n" + content when not empty +
// each call after a "\n".
std::string qwen25_assistant(const ChatMessage& m) {
  if (m.tool_calls.empty()) return "<|im_start|>assistant\n" + m.content;
  return "<|im_start|>assistant" + (m.content.empty() ? "" : "\n" + m.content) +
         tool_calls_text(config::ChatTemplate::kQwen25, m.tool_calls, true);
}

// The system turn: with tools, the system prompt (qwen2.5: or its default) then the tools section; without, the
// system message (qwen2.5: or its default; Qwen3: none).
std::string qwen_system(const std::vector<ChatMessage>& messages, const std::vector<ChatTool>& tools, bool qwen3) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  std::string system = has_system ? messages[0].content : qwen3 ? "" : kQwen25System;
  if (!tools.empty()) {
    const std::string head = qwen3 ? (has_system ? system + "\n\n" : "") : system + "\n\n";
    return "<|im_start|>system\n" + head + tools_section(tools) + "<|im_end|>\n";
  }
  if (qwen3 && !has_system) return "";
  return "<|im_start|>system\n" + system + "<|im_end|>\n";
}

std::string render_qwen(const std::vector<ChatMessage>& messages, const ChatOptions& opts,
                        const std::vector<ChatTool>& tools, bool qwen3) {
  std::string out = qwen_system(messages, tools, qwen3);
  // Qwen3: the last user message that is not a wrapped tool response (the template's last_query_index).
  size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    const auto& m = messages[i];
    if (m.role == "user" && !(starts_with(m.content, "<tool_response>") && ends_with(m.content, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const bool last = i + 1 == messages.size();
    if (m.role == "system") continue;  // first (checked), written above
    if (m.role == "tool") {  // consecutive tool messages share one user turn
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
      continue;
    }
    if (m.role == "assistant")
      out += qwen3 ? qwen3_assistant(m, i > last_query, last) : qwen25_assistant(m);
    else
      out += "<|im_start|>" + m.role + "\n" + m.content;
    out += "<|im_end|>\n";
  }
  if (opts.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (qwen3 && !opts.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

std::string render_deepseek_r1(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  std::string out = "<｜begin▁of▁sentence｜>";
  if (!messages.empty() && messages[0].role == "system") out += messages[0].content;
  for (const auto& m : messages) {
    if (m.role == "user") out += "<｜User｜>" + m.content;
    if (m.role == "assistant") out += "<｜Assistant｜>" + after_last(m.content, "</think>") + "<｜end▁of▁sentence｜>";
  }
  if (opts.add_generation_prompt) out += "<｜Assistant｜><think>\n";
  return out;
}
}  // namespace

std::string render_chat(config::ChatTemplate format, const std::vector<ChatMessage>& messages, const ChatOptions& opts,
                        const std::vector<ChatTool>& tools) {
  check_messages(format, messages, tools);
  switch (format) {
    case config::ChatTemplate::kChatml: return render_qwen(messages, opts, tools, true);
    case config::ChatTemplate::kQwen25: return render_qwen(messages, opts, tools, false);
    case config::ChatTemplate::kDeepseekR1: return render_deepseek_r1(messages, opts);
    case config::ChatTemplate::kNone: break;
    case config::ChatTemplate::kAuto:  // the model's own Jinja template: data::format_prompt renders it (jinja.h)
      throw DataError("render_chat: chat_template auto renders the model's own template, not a built-in format");
  }
  throw DataError("render_chat: chat_template none has no chat format (the prompt is used as it is)");
}

std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  return render_chat(config::ChatTemplate::kChatml, messages, opts);
}

}  // namespace gspo::tokenizer
