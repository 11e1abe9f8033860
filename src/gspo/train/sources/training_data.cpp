#include "gspo/train/sources/training_data.h"

#include "gspo/core/log.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/chat_tools.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::train {

std::vector<data::Example> fit_training_rows(std::vector<data::Example> rows, const config::Config& c,
                                             const tokenizer::Tokenizer& tok, const model::Policy& policy, bool loud,
                                             int64_t& dropped) {
  const int64_t limit = data::prompt_budget(c, "rollout.max_new_tokens", c.rollout.max_new_tokens,
                                            policy.manifest().max_seq_len, c.model.path);
  const int64_t total = static_cast<int64_t>(rows.size());
  auto kept = data::fit_prompts(std::move(rows), c.data, tok, limit, c.data.overlong_prompts == config::Overlong::kError,
                                tokenizer::chat_tools(c.tools.list));
  if (kept.dropped > 0 && loud) log::warn("{}", data::describe_dropped(kept, total, limit));
  dropped = kept.dropped;
  return std::move(kept.kept);
}

}  // namespace gspo::train
