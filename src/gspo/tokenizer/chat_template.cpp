#include "gspo/tokenizer/chat_template.h"

#include "gspo/core/error.h"

namespace gspo::tokenizer {
namespace {
const char* kQwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

void check_roles(const std::vector<ChatMessage>& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant")
      throw DataError("chat message " + std::to_string(i) + ": role must be system, user or assistant (got '" + r + "')");
    if (r == "system" && i != 0) throw DataError("chat message " + std::to_string(i) + ": a system message must come first");
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

// Qwen3's assistant turn: the <think> block split off the content; shown only after the last user query.
std::string qwen3_assistant(const std::string& content_in, bool after_last_query, bool last) {
  std::string content = content_in, reasoning;
  if (content_in.find("</think>") != std::string::npos) {
    content = lstrip_nl(after_last(content_in, "</think>"));
    reasoning = lstrip_nl(after_last(rstrip_nl(before_first(content_in, "</think>")), "<think>"));
  }
  if (after_last_query && (last || !reasoning.empty()))
    return "<|im_start|>assistant\n<think>\n" + lstrip_nl(rstrip_nl(reasoning)) + "\n</think>\n\n" + lstrip_nl(content);
  return "<|im_start|>assistant\n" + content;
}

std::string render_qwen(const std::vector<ChatMessage>& messages, const ChatOptions& opts, bool qwen3) {
  std::string out;
  if (!qwen3 && (messages.empty() || messages[0].role != "system"))
    out += std::string("<|im_start|>system\n") + kQwen25System + "<|im_end|>\n";
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
    if (qwen3 && m.role == "assistant")
      out += qwen3_assistant(m.content, i > last_query, i + 1 == messages.size());
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

std::string render_chat(config::ChatTemplate format, const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  check_roles(messages);
  switch (format) {
    case config::ChatTemplate::kChatml: return render_qwen(messages, opts, true);
    case config::ChatTemplate::kQwen25: return render_qwen(messages, opts, false);
    case config::ChatTemplate::kDeepseekR1: return render_deepseek_r1(messages, opts);
    case config::ChatTemplate::kNone: break;
  }
  throw DataError("render_chat: chat_template none has no chat format (the prompt is used as it is)");
}

std::string render_chatml(const std::vector<ChatMessage>& messages, const ChatOptions& opts) {
  return render_chat(config::ChatTemplate::kChatml, messages, opts);
}

}  // namespace gspo::tokenizer
