#include "gspo/data/prompt_fit.h"

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::data {

int64_t prompt_budget(const config::Config& cfg, const std::string& key, int64_t max_new_tokens, int64_t max_seq_len,
                      const std::string& model, bool for_eval) {
  if (max_new_tokens < max_seq_len) return max_seq_len - max_new_tokens;
  const std::string value = std::to_string(max_new_tokens), seq = std::to_string(max_seq_len);
  throw ConfigError(config::set_at(cfg, key) +
                    (for_eval ? "the eval's max_new_tokens (" + value + ", from " + key + ")" : key + " (" + value + ")") +
                    " must be smaller than the max_seq_len of the model '" + model + "' (" + seq +
                    "): prompt and response share those " + seq + " positions, so no prompt would fit");
}

PromptFit fit_prompts(std::vector<Example> rows, const config::DataOptions& opts, const tokenizer::Tokenizer& tok,
                      int64_t max_prompt_tokens, bool refuse, const std::vector<tokenizer::ChatTool>& tools) {
  PromptFit fit;
  const int64_t total = static_cast<int64_t>(rows.size());
  fit.kept.reserve(rows.size());
  for (auto& ex : rows) {
    const int64_t n = static_cast<int64_t>(tok.encode_prompt(format_prompt(opts, ex, tools)).size());
    if (n <= max_prompt_tokens) {
      fit.longest_kept = std::max(fit.longest_kept, n);
      fit.kept.push_back(std::move(ex));
      continue;
    }
    if (refuse)
      throw DataError(ex.id + ": the prompt has " + std::to_string(n) + " tokens after templating; with " +
                      "rollout.max_new_tokens the model's max_seq_len leaves room for " +
                      std::to_string(max_prompt_tokens) + " (set data.overlong_prompts: skip to drop such rows)");
    if (fit.dropped++ == 0) {
      fit.first_dropped = ex.id;
      fit.first_dropped_tokens = n;
    }
  }
  if (fit.kept.empty())
    throw DataError("no prompt fits: all " + std::to_string(total) + " are longer than " +
                    std::to_string(max_prompt_tokens) + " tokens (the model's max_seq_len minus "
                    "rollout.max_new_tokens); first: " + fit.first_dropped + ", " +
                    std::to_string(fit.first_dropped_tokens) + " tokens");
  return fit;
}

std::string describe_dropped(const PromptFit& fit, int64_t total, int64_t max_prompt_tokens) {
  return "skipped " + std::to_string(fit.dropped) + " of " + std::to_string(total) + " prompts longer than " +
         std::to_string(max_prompt_tokens) + " tokens (max_seq_len minus rollout.max_new_tokens; first: " +
         fit.first_dropped + ", " + std::to_string(fit.first_dropped_tokens) +
         " tokens); data.overlong_prompts: error refuses them instead";
}

}  // namespace gspo::data
