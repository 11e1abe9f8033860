#include "gspo/env/tool_format.h"

#include <algorithm>

#include "gspo/core/error.h"
#include "gspo/tokenizer/chat_tools.h"

namespace gspo::env {
namespace {

int64_t special(const tokenizer::Tokenizer& tok, const std::string& s, const char* format) {
  const auto it = tok.special_tokens().find(s);
  if (it == tok.special_tokens().end())
    throw ConfigError(std::string("tools: the ") + format + " tool format needs the special token " + s +
                      ", which the model's tokenizer lacks (data.chat_template picks the format)");
  return it->second;
}

class Hermes final : public ToolFormat {
 public:
  Hermes(const tokenizer::Tokenizer& tok, config::ChatTemplate format, bool thinking)
      : tok_(tok), format_(format), thinking_(thinking), im_end_(special(tok, "<|im_end|>", "hermes")) {
    special(tok, "<|im_start|>", "hermes");
  }
  const char* name() const override { return "hermes"; }
  int64_t turn_token() const override { return im_end_; }
  std::vector<ToolCall> calls(const std::string& text, const std::string&) const override {
    return parse_tool_calls(text);
  }
  // What the chat template renders after the assistant's <|im_end|> (tokenizer::tool_turn_ids): the results as one
  // user turn of <tool_response> blocks, then the next generation prompt; the outputs plain text.
  std::vector<int64_t> observation(const std::vector<std::string>& outputs) const override {
    return tokenizer::tool_turn_ids(format_, tok_, outputs, {true, thinking_});
  }

 private:
  const tokenizer::Tokenizer& tok_;
  config::ChatTemplate format_;
  bool thinking_;
  int64_t im_end_;
};

class Compact final : public ToolFormat {
 public:
  Compact(const tokenizer::Tokenizer& tok, std::vector<std::string> names) : tok_(tok), names_(std::move(names)) {
    const auto close = tok.encode_text("]");
    if (close.size() != 1)
      throw ConfigError("tools: the compact tool format ends a call's turn with ']', which the model's tokenizer does "
                        "not encode as one token");
    close_ = close.front();
  }
  const char* name() const override { return "compact"; }
  int64_t turn_token() const override { return close_; }
  std::vector<ToolCall> calls(const std::string& text, const std::string& question) const override {
    return {parse_compact_call(text, names_, question)};
  }
  std::vector<int64_t> observation(const std::vector<std::string>& outputs) const override {
    std::vector<int64_t> ids;
    for (const auto& o : outputs) {
      auto body = tok_.encode_text("{" + o + "}");  // plain text: a tool cannot write EOS
      ids.insert(ids.end(), body.begin(), body.end());
    }
    return ids;
  }

 private:
  const tokenizer::Tokenizer& tok_;
  std::vector<std::string> names_;
  int64_t close_ = -1;
};

}  // namespace

ToolCall parse_compact_call(const std::string& turn, const std::vector<std::string>& names,
                            const std::string& question) {
  ToolCall c;
  const size_t open = turn.rfind('[');
  if (open == std::string::npos) {
    c.error = "']' without '['";
    return c;
  }
  const std::string body = turn.substr(open + 1);
  const size_t space = body.find(' ');
  const std::string first = body.substr(0, space);
  if (names.empty()) {
    c.error = "no tools";
  } else if (space != std::string::npos && std::find(names.begin(), names.end(), first) != names.end()) {
    c.name = first;
    c.arguments = {{"input", body.substr(space + 1)}};
  } else {
    c.name = names.front();
    c.arguments = {{"input", body.empty() ? question : body}};
  }
  return c;
}

std::unique_ptr<ToolFormat> make_tool_format(const config::Config& cfg, const tokenizer::Tokenizer& tok,
                                             std::vector<std::string> tool_names) {
  switch (cfg.data.chat_template) {
    case config::ChatTemplate::kChatml:
      return std::make_unique<Hermes>(tok, config::ChatTemplate::kChatml, cfg.data.enable_thinking);
    case config::ChatTemplate::kQwen25:
      return std::make_unique<Hermes>(tok, config::ChatTemplate::kQwen25, true);
    case config::ChatTemplate::kNone:
      return std::make_unique<Compact>(tok, std::move(tool_names));
    case config::ChatTemplate::kDeepseekR1: break;
    case config::ChatTemplate::kAuto:
      throw ConfigError("tools: data.chat_template auto (the model's own template) has no tool-call parser yet; use "
                        "chatml, qwen2.5 or none");
  }
  throw ConfigError("tools: data.chat_template deepseek_r1 has no tool-call format here; use chatml, qwen2.5 or none");
}

}  // namespace gspo::env
