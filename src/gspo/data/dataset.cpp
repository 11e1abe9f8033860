#include "gspo/data/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>

#include "gspo/config/options.h"
#include "gspo/core/error.h"
#include "gspo/core/json_line.h"
#include "gspo/data/lcb_row.h"
#include "gspo/data/own_template.h"
#include "gspo/data/parquet.h"
#include "gspo/data/rng.h"
#include "gspo/tokenizer/chat_template.h"
#include "gspo/tokenizer/chat_tools.h"
#include "gspo/tokenizer/jinja.h"

namespace gspo::data {

std::string apply_template(const std::string& tmpl, const std::string& prompt) {
  std::string out;
  const std::string key = "{prompt}";
  size_t pos = 0;
  while (true) {
    size_t hit = tmpl.find(key, pos);
    out += tmpl.substr(pos, hit == std::string::npos ? std::string::npos : hit - pos);
    if (hit == std::string::npos) break;
    out += prompt;
    pos = hit + key.size();
  }
  return out;
}

std::string format_prompt(const config::DataOptions& o, const std::string& problem) {
  return format_prompt(o, problem, {});
}

namespace {
// The conversation a prompt is: data.system_prompt's system message unless the row brings its own, then the row's
// messages (data.prompt_template applied to the last user turn), or the one user turn `user`.
std::vector<PromptMessage> conversation(const config::DataOptions& o, const std::vector<PromptMessage>& given,
                                        const std::string& user) {
  std::vector<PromptMessage> msgs;
  const bool own_system = !given.empty() && given.front().role == "system";
  if (!o.system_prompt.empty() && !own_system) msgs.push_back({"system", o.system_prompt});
  if (given.empty()) {
    msgs.push_back({"user", user});
    return msgs;
  }
  size_t last_user = given.size();
  for (size_t i = 0; i < given.size(); ++i)
    if (given[i].role == "user") last_user = i;
  for (size_t i = 0; i < given.size(); ++i)
    msgs.push_back({given[i].role, i == last_user ? apply_template(o.prompt_template, given[i].content)
                                                  : given[i].content});
  return msgs;
}

// The conversation through the model's Jinja template, with the variables transformers passes (bos_token,
// eos_token, enable_thinking, add_generation_prompt) and `tools` as transformers passes them ({"type": "function",
// "function": {...}} each; null when none).
std::string render_own_template(const config::DataOptions& o, const std::vector<PromptMessage>& conv,
                                const std::vector<tokenizer::ChatTool>& tools) {
  const auto& tmpl = own_template(o);
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (const auto& m : conv) msgs.push_back({{"role", m.role}, {"content", m.content}});
  nlohmann::ordered_json shown = nullptr;
  if (!tools.empty()) {
    shown = nlohmann::ordered_json::array();
    for (const auto& t : tools) shown.push_back(tokenizer::tool_json(t));
  }
  return tokenizer::jinja::apply_chat_template(tmpl, msgs, true, shown, own_template_variables(o));
}
}  // namespace

namespace {
std::string render(const config::DataOptions& o, const std::vector<PromptMessage>& given, const std::string& problem,
                   const std::vector<tokenizer::ChatTool>& tools) {
  const std::string user = given.empty() ? apply_template(o.prompt_template, problem) : "";
  if (o.chat_template == config::ChatTemplate::kNone) {
    if (given.empty()) return user;
    throw ConfigError("data.chat_template none cannot render a prompt given as chat messages: set data.chat_template "
                      "auto (the model's own template) or the model's family (chatml, qwen2.5, deepseek_r1)");
  }
  const auto conv = conversation(o, given, user);
  if (o.chat_template == config::ChatTemplate::kAuto) return render_own_template(o, conv, tools);
  std::vector<tokenizer::ChatMessage> msgs;
  for (const auto& m : conv) msgs.push_back({m.role, m.content});
  return tokenizer::render_chat(o.chat_template, msgs, {true, o.enable_thinking}, tools);
}
}  // namespace

std::string format_prompt(const config::DataOptions& o, const std::string& problem,
                          const std::vector<tokenizer::ChatTool>& tools) {
  return render(o, {}, problem, tools);
}

std::string format_prompt(const config::DataOptions& o, const Example& ex,
                          const std::vector<tokenizer::ChatTool>& tools) {
  return render(o, ex.messages, ex.prompt, tools);
}

std::string format_prompt(const config::DataOptions& o, const Example& ex) { return render(o, ex.messages, ex.prompt, {}); }

namespace {
std::string field_names(const nlohmann::json& obj) {
  std::string have;
  for (const auto& [k, v] : obj.items()) have += (have.empty() ? "" : ", ") + k;
  return have;
}

// The field `key` names: a field of that name, else a dotted path through nested objects ("reward_model.ground_truth",
// as verl's rows nest the answer); null when absent. `missing` says where the path broke.
const nlohmann::json* find_field(const nlohmann::json& row, const std::string& key, std::string* missing = nullptr) {
  if (row.contains(key)) return &row.at(key);
  const nlohmann::json* at = &row;
  std::string walked;
  size_t from = 0;
  while (key.find('.') != std::string::npos) {
    const size_t dot = key.find('.', from);
    const std::string part = key.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    if (!at->is_object() || !at->contains(part)) {
      if (missing)
        *missing = walked.empty() ? "fields: " + field_names(row)
                                  : at->is_object() ? "'" + walked + "' has fields: " + field_names(*at)
                                                    : "'" + walked + "' is " + at->type_name() + ", not an object";
      return nullptr;
    }
    at = &at->at(part);
    walked += (walked.empty() ? "" : ".") + part;
    if (dot == std::string::npos) return at;
    from = dot + 1;
  }
  if (missing) *missing = "fields: " + field_names(row);
  return nullptr;
}

std::string field_text(const nlohmann::json& row, const std::string& key, const std::string& where, bool required) {
  std::string missing;
  const auto* found = find_field(row, key, &missing);
  if (!found) {
    if (!required) return "";
    throw DataError(where + ": no field '" + key + "' (" + missing + "); set data.prompt_key / data.answer_key");
  }
  const auto& v = *found;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  throw DataError(where + ": field '" + key + "' must be a string or a number (got " + v.type_name() + ")");
}

// The reference answer: field_text's string or number, or a list of one (["4"], [4]: how some exports store a single
// answer) read as its element, never as the list's JSON text. A list of several is refused naming the row: gspo
// grades against one reference a row (docs/verifiers.md, "Datasets").
std::string answer_text(const nlohmann::json& row, const std::string& key, const std::string& where, bool required) {
  const auto* found = find_field(row, key);
  if (!found || !found->is_array()) return field_text(row, key, where, required);
  const auto& list = *found;
  if (list.empty()) throw DataError(where + ": field '" + key + "' is an empty list: the row has no reference answer");
  if (list.size() > 1)
    throw DataError(where + ": field '" + key + "' holds " + std::to_string(list.size()) + " answers (" +
                    list.dump().substr(0, 80) + "); gspo grades against one reference answer a row: keep the one to "
                    "grade against (a list of one is read as its element)");
  const auto& v = list[0];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  throw DataError(where + ": field '" + key + "' is a list whose element (" + v.dump().substr(0, 40) +
                  ") is not a string or a number");
}
}  // namespace

namespace {
// The fields that carry code tests: ours ('tests'), HumanEval ('test'), APPS ('test_list'), LiveCodeBench
// ('public_test_cases').
bool has_code_tests(const nlohmann::json& row) {
  return row.is_object() && (row.contains("tests") || row.contains("test") || row.contains("test_list") ||
                             row.contains("public_test_cases"));
}

// A prompt given as a list of chat messages ({"role", "content"} objects: TRL's conversational format, verl's prompt
// column): into ex.messages, its last user turn into ex.prompt (what the judge, external verifiers and logs read).
void read_messages(const nlohmann::json& list, const std::string& key, const std::string& where, Example& ex) {
  if (list.empty()) throw DataError(where + ": field '" + key + "' is an empty list of messages");
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& m = list[i];
    const std::string at = where + ": field '" + key + "' message " + std::to_string(i);
    if (!m.is_object() || !m.contains("role") || !m.contains("content"))
      throw DataError(at + " is not a {\"role\", \"content\"} object (got " + m.dump().substr(0, 60) + ")");
    if (!m["role"].is_string() || !m["content"].is_string())
      throw DataError(at + ": role and content must be strings (content as a list of parts is not read)");
    const auto role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant")
      throw DataError(at + ": role '" + role + "' (a prompt's messages are system, user or assistant)");
    if (role == "system" && i > 0) throw DataError(at + ": a system message comes first");
    ex.messages.push_back({role, m["content"].get<std::string>()});
    if (role == "user") ex.prompt = ex.messages.back().content;
  }
  if (ex.prompt.empty()) throw DataError(where + ": field '" + key + "' has no user message with content");
  if (ex.messages.back().role == "assistant")
    throw DataError(where + ": field '" + key + "' ends with an assistant message: a prompt ends with the turn the "
                    "policy answers");
}

std::string string_field(const nlohmann::json& row, const char* key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
}
}  // namespace

namespace {

struct RowKeys {
  const std::string& prompt;
  const std::string& answer;
  bool need_prompt;
  const std::string& source;
};

// The row's data source (data.source_key): a string, or "" when the key is empty or the row has none (or null).
std::string source_text(const nlohmann::json& row, const std::string& key, const std::string& where) {
  const auto* found = key.empty() ? nullptr : find_field(row, key);
  if (!found || found->is_null()) return "";
  if (!found->is_string())
    throw DataError(where + ": field '" + key + "' (data.source_key) must be a string naming the row's data source "
                    "(got " + found->type_name() + ")");
  return found->get<std::string>();
}

// One row (a JSON object; `raw` its text, kept for external verifiers and code tests) named `where` in messages.
Example read_row(const nlohmann::json& row, const std::string& raw, const std::string& where, const RowKeys& keys) {
  Example ex;
  ex.id = where;
  ex.row = raw;
  ex.difficulty = string_field(row, "difficulty");
  // (a number, as competition rows' ratings are, as its text: 1600)
  if (row.contains("difficulty") && row["difficulty"].is_number()) ex.difficulty = row["difficulty"].dump();
  ex.date = string_field(row, "contest_date").substr(0, 10);
  ex.source = source_text(row, keys.source, where);
  std::string key = keys.prompt;
  if (key == "auto" && is_lcb_row(row)) {  // LiveCodeBench: the prompt is built from the problem and starter code
    ex.prompt = lcb_prompt(row);
    return ex;
  }
  if (key == "auto") {
    key.clear();
    for (const char* k : {"prompt", "problem", "question", "description"})
      if (key.empty() && row.contains(k)) key = k;
    if (key.empty() && keys.need_prompt)
      throw DataError(where + ": no prompt field (tried prompt, problem, question, description; fields: " +
                      field_names(row) + "); set data.prompt_key");
  }
  const auto* given = key.empty() ? nullptr : find_field(row, key);
  if (given && given->is_array()) {
    read_messages(*given, key, where, ex);
  } else if (keys.need_prompt || given) {
    ex.prompt = field_text(row, key, where, true);
    if (ex.prompt.empty() && keys.need_prompt) throw DataError(where + ": field '" + key + "' is empty");
  }
  ex.answer = answer_text(row, keys.answer, where, !has_code_tests(row));
  return ex;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A .json file: one JSON array of row objects, or an object whose "data" field is that array (the layouts the Hub's
// `datasets` JSON loader reads). Rows are named "FILE[i]" (from 0).
std::vector<Example> load_json_array(const std::string& path, const RowKeys& keys) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read dataset '" + path + "': " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto all = nlohmann::json::parse(text, nullptr, false);
  if (all.is_discarded()) throw DataError(path + ": not valid JSON (a .json dataset is one JSON array of rows; JSON "
                                          "lines go in a .jsonl file)");
  const auto* list = all.is_array() ? &all : all.is_object() && all.contains("data") ? &all["data"] : nullptr;
  if (!list || !list->is_array())
    throw DataError(path + ": a .json dataset must be an array of row objects, or an object whose \"data\" field is "
                    "one (got " + std::string(all.type_name()) + ")");
  std::vector<Example> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string where = path + "[" + std::to_string(i) + "]";
    const auto& row = (*list)[i];
    if (!row.is_object()) throw DataError(where + ": a row must be a JSON object (got " + row.type_name() + ")");
    out.push_back(read_row(row, row.dump(), where, keys));
  }
  return out;
}

}  // namespace

std::vector<Example> load_jsonl(const std::string& path, const std::string& prompt_key, const std::string& answer_key,
                                bool need_prompt, const std::string& source_key) {
  const RowKeys keys{prompt_key, answer_key, need_prompt, source_key};
  if (ends_with(path, ".json")) return load_json_array(path, keys);
  if (is_parquet_path(path)) {  // a .parquet file or a directory of shards (data/parquet.h)
    std::vector<Example> out;
    for_each_parquet_row(path, [&](const ParquetRow& r) { out.push_back(read_row(r.row, r.text, r.where, keys)); });
    return out;
  }
  std::ifstream in(path);
  if (!in) throw IoError("cannot read dataset '" + path + "': " + std::strerror(errno));
  std::vector<Example> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    out.push_back(read_row(core::parse_json_object(line, where), line, where, keys));
  }
  return out;
}

namespace {

// The first `needed` of all distinct problems "a op b=" (a, b in [0, max_operand], op in ops) in an order drawn
// from `seed`: enumerated and shuffled when the space is small, else drawn with rejection of repeats.
std::vector<Example> distinct_arithmetic(int64_t needed, int64_t max_operand, const std::string& ops_in, uint64_t seed) {
  std::string ops;
  for (char c : ops_in)
    if (ops.find(c) == std::string::npos) ops += c;
  const double side = static_cast<double>(max_operand + 1);
  const double total = side * side * static_cast<double>(ops.size());
  if (needed > total)
    throw DataError("arithmetic task: " + std::to_string(needed) + " distinct problems asked for (data.num_prompts + "
                    "data.holdout) but max_operand " + std::to_string(max_operand) + " with operators '" + ops +
                    "' has only " + std::to_string(static_cast<int64_t>(total)));
  auto make = [&](int64_t a, char op, int64_t b, size_t i) {
    const int64_t r = op == '+' ? a + b : op == '-' ? a - b : a * b;
    return Example{"arithmetic:" + std::to_string(i), std::to_string(a) + op + std::to_string(b) + "=",
                   std::to_string(r), "", "", ""};
  };
  SplitMix rng(seed);
  std::vector<Example> out;
  if (total <= 4.0 * static_cast<double>(needed) || total <= 1e5) {
    std::vector<int64_t> keys(static_cast<size_t>(total));
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<int64_t>(i);
    for (size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[rng.below(i)]);  // Fisher-Yates
    for (int64_t i = 0; i < needed; ++i) {
      const int64_t k = keys[i], n = max_operand + 1;
      out.push_back(make(k / (n * static_cast<int64_t>(ops.size())), ops[(k / n) % ops.size()], k % n, out.size()));
    }
    return out;
  }
  std::set<std::tuple<int64_t, char, int64_t>> seen;
  while (static_cast<int64_t>(out.size()) < needed) {
    const int64_t a = static_cast<int64_t>(rng.below(max_operand + 1));
    const int64_t b = static_cast<int64_t>(rng.below(max_operand + 1));
    const char op = ops[rng.below(ops.size())];
    if (seen.emplace(a, op, b).second) out.push_back(make(a, op, b, out.size()));
  }
  return out;
}

}  // namespace

std::vector<Example> make_arithmetic(int64_t count, int64_t max_operand, const std::string& ops, uint64_t seed) {
  return distinct_arithmetic(count, max_operand, ops, seed);
}

std::vector<Example> arithmetic_holdout(int64_t count, int64_t holdout, int64_t max_operand, const std::string& ops,
                                        uint64_t seed) {
  auto all = distinct_arithmetic(count + holdout, max_operand, ops, seed);
  return std::vector<Example>(all.begin() + count, all.end());
}

bool row_has_code_tests(const Example& ex) {
  if (ex.row.empty()) return false;
  return has_code_tests(nlohmann::json::parse(ex.row, nullptr, false));
}

TestCoverage code_test_coverage(const std::vector<Example>& rows) {
  TestCoverage c;
  for (const auto& ex : rows) {
    if (row_has_code_tests(ex)) {
      if (c.with_tests++ == 0) c.first_with = ex.id;
    } else if (c.without_tests++ == 0) {
      c.first_without = ex.id;
    }
    if (ex.answer.empty() && c.without_answer++ == 0) c.first_without_answer = ex.id;
  }
  return c;
}

std::vector<std::string> number_sources(std::vector<Example>& rows) {
  std::set<std::string> names;
  for (const auto& ex : rows)
    if (!ex.source.empty()) names.insert(ex.source);
  const std::vector<std::string> sorted(names.begin(), names.end());
  for (auto& ex : rows)
    ex.source_id = ex.source.empty() ? -1
                                     : std::lower_bound(sorted.begin(), sorted.end(), ex.source) - sorted.begin();
  return sorted;
}

int64_t arithmetic_pool_size(const config::DataOptions& o) {
  if (o.num_prompts > 0) return o.num_prompts;
  std::string ops;
  for (char c : o.operators)
    if (ops.find(c) == std::string::npos) ops += c;
  const double total = static_cast<double>(o.max_operand + 1) * static_cast<double>(o.max_operand + 1) *
                       static_cast<double>(ops.size());
  if (total > 1e6)
    throw DataError("arithmetic task: data.num_prompts 0 means every distinct problem, and max_operand " +
                    std::to_string(o.max_operand) + " has over a million; set data.num_prompts");
  return static_cast<int64_t>(total) - o.holdout;
}

std::vector<Example> load_heldout(const config::DataOptions& o) {
  if (o.task != config::Task::kArithmetic || o.holdout == 0) return {};
  return arithmetic_holdout(arithmetic_pool_size(o), o.holdout, o.max_operand, o.operators, o.seed);
}

namespace {
std::string mix_name(const config::DataOptions& o, size_t i) {
  return "data.mix[" + std::to_string(i) + "] ('" + o.mix[i].path + "')";
}

// data.mix's datasets one after another, each read with its own keys (or data's).
std::vector<Example> load_mix(const config::DataOptions& o) {
  std::vector<Example> rows;
  for (size_t i = 0; i < o.mix.size(); ++i) {
    const auto& m = o.mix[i];
    auto part = load_jsonl(m.path, m.prompt_key.empty() ? o.prompt_key : m.prompt_key,
                           m.answer_key.empty() ? o.answer_key : m.answer_key, true, o.source_key);
    if (part.empty()) throw DataError(mix_name(o, i) + " has no examples");
    for (auto& ex : part) {
      ex.dataset = static_cast<int64_t>(i);
      rows.push_back(std::move(ex));
    }
  }
  return rows;
}
}  // namespace

std::vector<Example> load_dataset(const config::DataOptions& o) {
  const bool jsonl = o.task == config::Task::kJsonl;
  if (jsonl && !o.mix.empty()) return load_mix(o);
  auto rows = jsonl ? load_jsonl(o.path, o.prompt_key, o.answer_key, true, o.source_key)
                                : make_arithmetic(arithmetic_pool_size(o), o.max_operand, o.operators, o.seed);
  if (rows.empty()) throw DataError((jsonl ? "dataset '" + o.path + "'" : std::string("arithmetic task")) +
                                    " has no examples");
  return rows;
}

namespace {
// Rows per dataset of data.mix in `rows` (load_dataset's, in the mix's order).
std::vector<int64_t> mix_sizes(const config::DataOptions& o, const std::vector<Example>& rows) {
  std::vector<int64_t> sizes(o.mix.size(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t d = rows[i].dataset;
    if (d < 0 || d >= static_cast<int64_t>(sizes.size()) || (i > 0 && d < rows[i - 1].dataset))
      throw std::logic_error("the rows are not data.mix's datasets in order");
    ++sizes[d];
  }
  return sizes;
}
}  // namespace

Cursor make_cursor(const config::DataOptions& o, const std::vector<Example>& rows) {
  const auto seed = static_cast<uint64_t>(o.seed);
  if (o.task != config::Task::kJsonl || o.mix.empty()) return Cursor(static_cast<int64_t>(rows.size()), o.shuffle, seed);
  const auto sizes = mix_sizes(o, rows);
  std::vector<double> weights;
  for (size_t i = 0; i < o.mix.size(); ++i) {
    if (sizes[i] == 0)
      throw DataError(mix_name(o, i) + ": no prompt is left once prompts too long for rollout.max_new_tokens are "
                      "dropped (data.overlong_prompts)");
    weights.push_back(o.mix[i].weight);
  }
  return Cursor(sizes, weights, o.shuffle, seed);
}

std::string describe_mix(const config::DataOptions& o, const std::vector<Example>& rows) {
  if (o.task != config::Task::kJsonl || o.mix.empty()) return "";
  const auto sizes = mix_sizes(o, rows);
  std::string out = "data.mix:";
  for (size_t i = 0; i < o.mix.size(); ++i)
    out += std::string(i ? "," : "") + " '" + o.mix[i].path + "' (" + std::to_string(sizes[i]) + " rows) at weight " +
           config::value_text(o.mix[i].weight);
  return out;
}

}  // namespace gspo::data
