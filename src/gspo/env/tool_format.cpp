#include "gspo/env/tool_format.h"

#include <algorithm>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/own_template.h"
#include "gspo/env/call_syntax.h"
#include "gspo/tokenizer/chat_tools.h"
#include "gspo/tokenizer/template_tools.h"

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
  std::vector<int64_t> observation(const std::vector<std::string>& outputs,
                                   const std::vector<ToolCall>&) const override {
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
  std::vector<int64_t> observation(const std::vector<std::string>& outputs,
                                   const std::vector<ToolCall>&) const override {
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

// data.chat_template auto: the syntax read off the template, the turns rendered by it.
class OwnTemplate final : public ToolFormat {
 public:
  OwnTemplate(const config::Config& cfg, const tokenizer::Tokenizer& tok, std::vector<std::string> names)
      : syntax_(syntax_of(cfg)),
        name_(std::string("template (") + call_syntax_name(syntax_) + ")"),
        names_(std::move(names)),
        turns_(probe(cfg, tok)) {
    log::info("tools: calls read as {} through {}'s own template; turns end with {}", call_syntax_name(syntax_),
              data::own_template(cfg.data).origin(), tok.decode({turns_.turn_token()}, true));
    if (!turns_.prefix_note().empty()) log::info("tools: {}", turns_.prefix_note());
  }
  const char* name() const override { return name_.c_str(); }
  int64_t turn_token() const override { return turns_.turn_token(); }
  bool reads_special() const override { return true; }
  std::vector<ToolCall> calls(const std::string& text, const std::string&) const override {
    auto calls = parse_calls(syntax_, text);
    if (static_cast<int64_t>(calls.size()) <= turns_.max_calls()) return calls;
    ToolCall refused;  // the model's template cannot show more: one failure the model reads
    refused.error = std::to_string(calls.size()) + " tool calls in one turn; this model's chat template takes " +
                    std::to_string(turns_.max_calls()) + " per turn";
    return {refused};
  }
  std::vector<int64_t> observation(const std::vector<std::string>& outputs,
                                   const std::vector<ToolCall>& calls) const override {
    std::vector<tokenizer::TurnCall> shown;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const ToolCall* c = i < calls.size() ? &calls[i] : nullptr;
      const bool known = c && std::find(names_.begin(), names_.end(), c->name) != names_.end();
      shown.push_back({c ? c->id : "", known ? c->name : "unknown_tool"});  // nothing the model wrote but ids reaches it
    }
    return turns_.ids(shown, outputs);
  }

 private:
  static CallSyntax syntax_of(const config::Config& cfg) {
    const auto& tmpl = data::own_template(cfg.data);
    if (const auto s = detect_call_syntax(cfg.data.chat_template_source)) return *s;
    throw ConfigError("tools.list with data.chat_template auto: " + tmpl.origin() + "'s template writes tool calls " +
                      "in no syntax gspo reads (Qwen/Hermes <tool_call> blocks, Llama 3.x JSON, Mistral " +
                      "[TOOL_CALLS]), or none at all; name the family's format (chatml, qwen2.5) or set tools.list: []");
  }
  static tokenizer::TemplateToolTurns probe(const config::Config& cfg, const tokenizer::Tokenizer& tok) {
    nlohmann::ordered_json shown = nlohmann::ordered_json::array();  // the run's tools, as its prompts show them
    for (const auto& t : tokenizer::chat_tools(cfg.tools.list)) shown.push_back(tokenizer::tool_json(t));
    try {
      return tokenizer::TemplateToolTurns(data::own_template(cfg.data), data::own_template_variables(cfg.data), tok,
                                          shown.empty() ? nlohmann::ordered_json() : shown);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("tools.list: ") + e.what());
    }
  }

  CallSyntax syntax_;
  std::string name_;
  std::vector<std::string> names_;
  tokenizer::TemplateToolTurns turns_;
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
      return std::make_unique<OwnTemplate>(cfg, tok, std::move(tool_names));
  }
  throw ConfigError("tools: data.chat_template deepseek_r1 has no tool-call format here; use chatml, qwen2.5 or none");
}

}  // namespace gspo::env
