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
    if (tok.eos_id() < 0) throw ConfigError("tools: the compact tool format ends turns with EOS; the tokenizer has none");
  }
  const char* name() const override { return "compact"; }
  int64_t turn_token() const override { return tok_.eos_id(); }
  std::vector<ToolCall> calls(const std::string& text, const std::string& question) const override {
    return parse_compact_calls(text, names_, question);
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
};

}  // namespace

std::vector<ToolCall> parse_compact_calls(const std::string& text, const std::vector<std::string>& names,
                                          const std::string& question) {
  std::vector<ToolCall> out;
  for (size_t at = text.find('['); at != std::string::npos; at = text.find('[', at)) {
    const size_t close = text.find(']', at + 1);
    ToolCall c;
    if (close == std::string::npos) {
      c.error = "unterminated call (no ']' after '[')";
      out.push_back(std::move(c));
      break;
    }
    const std::string body = text.substr(at + 1, close - at - 1);
    at = close + 1;
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
    out.push_back(std::move(c));
  }
  return out;
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
  }
  throw ConfigError("tools: data.chat_template deepseek_r1 has no tool-call format here; use chatml, qwen2.5 or none");
}

}  // namespace gspo::env
