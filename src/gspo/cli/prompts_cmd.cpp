// `gspo prompts`: the config's dataset rows as the policy reads them (#66 item 4: no silent defaults). Rendered by
// data::format_prompt and tokenized by Tokenizer::encode_prompt, the calls training makes, so what is printed is what
// is trained on: the chat template (data.chat_template auto resolved from the model as training resolves it), the
// BOS the tokenizer's post-processor adds, the tools' system message.
#include <nlohmann/json.hpp>

#include <iostream>

#include "gspo/cli/eval_cmd.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/env/episode.h"
#include "gspo/io/model_load.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::cli {
namespace {

void print_row(const data::Example& ex, const std::string& text, const std::vector<int64_t>& ids,
               const tokenizer::Tokenizer& tok, int64_t budget, const PromptsArgs& a) {
  const auto n = static_cast<int64_t>(ids.size());
  if (a.json) {
    nlohmann::ordered_json j{{"id", ex.id}, {"prompt", text}, {"ids", ids}, {"prompt_tokens", n},
                             {"budget", budget}, {"fits", n <= budget}};
    if (a.tokens) {
      std::vector<std::string> pieces;
      for (auto id : ids) pieces.push_back(tok.token_bytes(id, true));
      j["tokens"] = pieces;
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << "=== " << ex.id << ": " << n << " tokens" << (n <= budget ? "" : " (over the budget: dropped at load)")
            << "\n" << text << "\n--- ids\n";
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
  if (a.tokens) {
    std::cout << "--- tokens\n";
    for (size_t i = 0; i < ids.size(); ++i)
      std::cout << (i ? " | " : "") << nlohmann::json(tok.token_bytes(ids[i], true)).dump(-1, ' ', false,
                                                                                           nlohmann::json::error_handler_t::replace);
    std::cout << "\n";
  }
}

}  // namespace

int prompts(const PromptsArgs& a) {
  if (a.rows < 1) throw ConfigError("--rows must be >= 1 (got " + std::to_string(a.rows) + ")");
  if (a.from < 0) throw ConfigError("--from must be >= 0 (got " + std::to_string(a.from) + ")");
  auto cfg = config::load(a.config, a.overrides);
  if (cfg.model.path.empty()) throw ConfigError("model.path is empty: the prompts are tokenized by the model's tokenizer");
  io::ModelLoad what;  // the weights stay on the host, unchecked: only the tokenizer, manifest and template are read
  what.file = cfg.model.path;
  what.frozen = true;
  what.check_contract = false;
  what.tokenizer_path = cfg.tokenizer.path;
  auto loaded = io::load_model(what);
  io::resolve_chat_template(cfg, loaded);
  const auto& tok = *loaded.tok;
  const auto rows = data::load_dataset(cfg.data);
  if (a.from >= static_cast<int64_t>(rows.size()))
    throw ConfigError("--from " + std::to_string(a.from) + ": the dataset has " + std::to_string(rows.size()) + " rows");
  const int64_t max_seq_len = loaded.policy->manifest().max_seq_len;
  const int64_t budget = data::prompt_budget(cfg, "rollout.max_new_tokens", cfg.rollout.max_new_tokens, max_seq_len,
                                             cfg.model.path);
  const auto tools = env::make_tool_env(cfg, tok, *loaded.policy);
  if (!a.json)
    std::cout << "chat template: " << config::name_of(cfg.data.chat_template)
              << (cfg.data.chat_template == config::ChatTemplate::kAuto ? " (" + cfg.data.chat_template_origin + ")" : "")
              << "; prompt budget " << budget << " tokens (max_seq_len " << max_seq_len << " - rollout.max_new_tokens "
              << cfg.rollout.max_new_tokens << "); rows " << a.from << ".." << std::min<int64_t>(a.from + a.rows,
              static_cast<int64_t>(rows.size())) - 1 << " of " << rows.size() << "\n";
  for (int64_t r = a.from; r < std::min<int64_t>(a.from + a.rows, static_cast<int64_t>(rows.size())); ++r) {
    const auto text = data::format_prompt(cfg.data, rows[r], env::shown_tools(tools.get()));
    print_row(rows[r], text, tok.encode_prompt(text), tok, budget, a);
  }
  return 0;
}

}  // namespace gspo::cli
