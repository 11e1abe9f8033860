#include "gspo/tokenizer/template_tools.h"

#include <algorithm>
#include <cctype>

#include "gspo/core/error.h"
#include "gspo/tokenizer/chat_tools.h"

namespace gspo::tokenizer {
namespace {

using nlohmann::ordered_json;

const char* kProbeAnswer = "Hello there";
const char* kProbeOutput = "  a \"quoted\" \\ path\n\tline 2 é  ";  // tells the output forms apart

// The sentinel standing for output `i` while the template renders: letters and digits only, so no form changes it.
std::string sentinel(size_t i) { return "GsPoOuTpUt" + std::to_string(i) + "Q"; }

std::string python_strip(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string written(TemplateToolTurns::OutputForm f, const std::string& out) {
  switch (f) {
    case TemplateToolTurns::OutputForm::kAsIs: return out;
    case TemplateToolTurns::OutputForm::kTrimmed: return python_strip(out);
    case TemplateToolTurns::OutputForm::kJsonString: {
      const std::string quoted = tojson(ordered_json(out));
      return quoted.substr(1, quoted.size() - 2);
    }
  }
  return out;
}

// A short excerpt of `s` around `at`, its control characters escaped, for messages.
std::string around(const std::string& s, size_t at) {
  const size_t from = at > 30 ? at - 30 : 0;
  return tojson(ordered_json(s.substr(from, 60)));
}

}  // namespace

const char* output_form_name(TemplateToolTurns::OutputForm f) {
  switch (f) {
    case TemplateToolTurns::OutputForm::kAsIs: return "as written";
    case TemplateToolTurns::OutputForm::kTrimmed: return "stripped of surrounding whitespace";
    case TemplateToolTurns::OutputForm::kJsonString: return "as a JSON string";
  }
  return "?";
}

std::string TemplateToolTurns::call_id(const std::string& written_id, size_t index) {
  const bool alnum = std::all_of(written_id.begin(), written_id.end(),
                                 [](unsigned char c) { return std::isalnum(c) != 0; });
  if (written_id.size() == 9 && alnum) return written_id;
  std::string digits = std::to_string(index % 100000);
  return "call" + std::string(5 - digits.size(), '0') + digits;
}

TemplateToolTurns::TemplateToolTurns(const jinja::ChatJinja& tmpl, ordered_json extra, const Tokenizer& tok,
                                     ordered_json tools)
    : tmpl_(tmpl), extra_(std::move(extra)), tok_(tok), tools_(std::move(tools)) {
  probe_turn_end();
  const std::vector<TurnCall> one{{"", "tool"}}, two{{"", "tool"}, {"", "tool"}};  // ("tool": a name to find)
  try {
    skeleton(one);
  } catch (const Error& e) {
    throw ConfigError(tmpl_.origin() + ": tools with data.chat_template auto: the template cannot write a tool turn " +
                      "after an assistant's call: " + e.what());
  }
  try {
    skeleton(two);
    max_calls_ = int64_t{1} << 30;
  } catch (const Error&) {
    max_calls_ = 1;  // (Llama 3.x: "This model only supports single tool-calls at once!")
  }
  probe_form();
  check_prefix();
}

// An assistant message's end: the text after its content in [user, assistant] rendered without a generation prompt,
// which must start with a special token (the one the model samples to end a turn).
void TemplateToolTurns::probe_turn_end() {
  prompt_ = jinja::apply_chat_template(tmpl_, ordered_json::array({{{"role", "user"}, {"content", "Hi"}}}), true,
                                       tools_, extra_);
  const ordered_json msgs = ordered_json::array({{{"role", "user"}, {"content", "Hi"}},
                                                 {{"role", "assistant"}, {"content", kProbeAnswer}}});
  const std::string text = jinja::apply_chat_template(tmpl_, msgs, false, tools_, extra_);
  const size_t at = text.rfind(kProbeAnswer);
  if (at == std::string::npos)
    throw ConfigError(tmpl_.origin() + ": tools with data.chat_template auto: the template does not write an " +
                      "assistant message's content as it is, so gspo cannot tell where its turns end");
  turn_end_ = text.substr(at + std::string(kProbeAnswer).size());
  const auto* special = special_at(tok_, turn_end_, 0);
  if (!special)
    throw ConfigError(tmpl_.origin() + ": tools with data.chat_template auto: the template ends an assistant message " +
                      "with " + tojson(ordered_json(turn_end_)) + ", which does not start with one of the tokenizer's " +
                      "special tokens: a tool turn needs a token the model samples to end its turn");
  turn_token_ = special->second;
  turn_token_text_ = special->first;
}

std::string TemplateToolTurns::render_turn(const std::vector<TurnCall>& calls, const std::vector<std::string>& outputs,
                                           bool with_results) const {
  ordered_json tool_calls = ordered_json::array();
  for (size_t i = 0; i < calls.size(); ++i)
    tool_calls.push_back({{"id", call_id(calls[i].id, i)},
                          {"type", "function"},
                          {"function", {{"name", calls[i].name}, {"arguments", ordered_json::object()}}}});
  ordered_json msgs = ordered_json::array({{{"role", "user"}, {"content", "Hi"}},
                                           {{"role", "assistant"}, {"content", ""}, {"tool_calls", tool_calls}}});
  if (with_results)
    for (size_t i = 0; i < calls.size(); ++i)
      msgs.push_back({{"role", "tool"},
                      {"tool_call_id", call_id(calls[i].id, i)},
                      {"name", calls[i].name},
                      {"content", outputs.at(i)}});
  return jinja::apply_chat_template(tmpl_, msgs, with_results, tools_, extra_);
}

// The template's text around the outputs after the call turn's token. The call turn starts where the render with the
// results departs from the prompt's render (after the assistant header, or inside a generation prompt the template
// drops from earlier turns, as Qwen3's empty think block) and ends at the first turn token from there, which must
// close a turn holding the first call's name.
TemplateToolTurns::Skeleton TemplateToolTurns::skeleton(const std::vector<TurnCall>& calls) const {
  std::vector<std::string> marks;
  for (size_t i = 0; i < calls.size(); ++i) marks.push_back(sentinel(i));
  const std::string after = render_turn(calls, marks, true);
  const size_t common = static_cast<size_t>(
      std::mismatch(prompt_.begin(), prompt_.end(), after.begin(), after.end()).first - prompt_.begin());
  const size_t end = after.find(turn_token_text_, common);
  if (end == std::string::npos)
    throw DataError("no " + turn_token_text_ + " ends the assistant's call turn (" + around(after, common) + ")");
  if (after.substr(common, end - common).find(calls.front().name) == std::string::npos)
    throw DataError("the assistant's call turn ending at character " + std::to_string(end) + " does not hold its " +
                    "call (" + around(after, end) + ")");
  const size_t k = end + turn_token_text_.size();
  Skeleton s;
  size_t from = k;
  for (size_t i = 0; i < marks.size(); ++i) {
    const size_t at = after.find(marks[i], from);
    if (at == std::string::npos)
      throw DataError("the tool turn does not hold tool output " + std::to_string(i + 1) + " as given (it was " +
                      marks[i] + "; after the call turn the template wrote " + around(after.substr(k), 30) + ")");
    s.text.push_back(after.substr(from, at - from));
    from = at + marks[i].size();
  }
  s.text.push_back(after.substr(from));
  return s;
}

// The prefix check: does the conversation rendered again after a tool turn extend what the policy saw (the prompt,
// its call turn)? Where it does not, say where.
void TemplateToolTurns::check_prefix() {
  const std::vector<TurnCall> one{{"", "tool"}};
  const std::string after = render_turn(one, {"42"}, true), before = render_turn(one, {}, false);
  const size_t end = before.rfind(turn_token_text_);
  const std::string seen = end == std::string::npos ? before : before.substr(0, end + turn_token_text_.size());
  const size_t at = static_cast<size_t>(
      std::mismatch(seen.begin(), seen.end(), after.begin(), after.end()).first - seen.begin());
  if (at == seen.size()) return;
  prefix_note_ = "rendered again once tool results follow, a conversation differs from what the policy saw (its " +
                 std::string("call turn as the template writes it) at character ") + std::to_string(at) + ": " +
                 around(seen, at) + " became " + around(after, at) +
                 "; episodes keep the tokens the policy sampled (docs/tools.md)";
}

// How the template writes an output: the form under which a tricky output's render equals the skeleton filled in.
void TemplateToolTurns::probe_form() {
  const std::vector<TurnCall> one{{"", "tool"}};
  const auto s = skeleton(one);
  const std::string real = render_turn(one, {kProbeOutput}, true);
  for (auto f : {OutputForm::kAsIs, OutputForm::kTrimmed, OutputForm::kJsonString}) {
    const std::string filled = s.text[0] + written(f, kProbeOutput) + s.text[1];
    if (real.size() >= filled.size() && real.compare(real.size() - filled.size(), filled.size(), filled) == 0) {
      form_ = f;
      return;
    }
  }
  throw ConfigError(tmpl_.origin() + ": tools with data.chat_template auto: the template changes a tool's output in " +
                    "a way gspo does not follow (not as written, stripped, or as a JSON string): " +
                    tojson(ordered_json(kProbeOutput)) + " became " + tojson(ordered_json(real)));
}

std::vector<std::pair<std::string, bool>> TemplateToolTurns::parts(const std::vector<TurnCall>& calls,
                                                                  const std::vector<std::string>& outputs) const {
  if (calls.empty() || calls.size() != outputs.size())
    throw DataError("tool turn: " + std::to_string(calls.size()) + " calls and " + std::to_string(outputs.size()) +
                    " outputs (one output per call, at least one)");
  if (static_cast<int64_t>(calls.size()) > max_calls_)
    throw DataError("tool turn: " + std::to_string(calls.size()) + " calls, and " + tmpl_.origin() +
                    "'s template takes " + std::to_string(max_calls_) + " per turn");
  Skeleton s;
  try {
    s = skeleton(calls);
  } catch (const Error& e) {
    throw DataError(tmpl_.origin() + ": tool turn: " + e.what());
  }
  std::vector<std::pair<std::string, bool>> out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    out.push_back({s.text[i], true});
    out.push_back({written(form_, outputs[i]), false});
  }
  out.push_back({s.text.back(), true});
  return out;
}

std::string TemplateToolTurns::text(const std::vector<TurnCall>& calls, const std::vector<std::string>& outputs) const {
  std::string t;
  for (const auto& p : parts(calls, outputs)) t += p.first;
  return t;
}

std::vector<int64_t> TemplateToolTurns::ids(const std::vector<TurnCall>& calls,
                                            const std::vector<std::string>& outputs) const {
  return encode_parts(tok_, parts(calls, outputs));
}

}  // namespace gspo::tokenizer
