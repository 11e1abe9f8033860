#include "gspo/eval/eval_sets.h"

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/eval/competition.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/chat_tools.h"

namespace gspo::eval {

rollout::SamplingParams eval_sampling(const config::Config& cfg) {
  const auto& e = cfg.eval;
  auto sp = rollout::sampling_params(cfg);
  if (e.temperature >= 0) sp.temperature = e.temperature;
  if (e.top_p >= 0) sp.top_p = e.top_p;
  if (e.top_k >= 0) sp.top_k = e.top_k;
  if (e.max_new_tokens > 0) sp.max_new_tokens = e.max_new_tokens;
  if (e.min_new_tokens >= 0) sp.min_new_tokens = e.min_new_tokens;
  if (e.kv_cache_mb >= 0) {
    sp.kv_cache_bytes = e.kv_cache_mb << 20;
    sp.kv_budget_key = "eval.kv_cache_mb";
  }
  return sp;
}

int64_t eval_prompt_budget(const config::Config& cfg, int64_t max_seq_len, const std::string& model) {
  const std::string key = cfg.eval.max_new_tokens > 0 ? "eval.max_new_tokens" : "rollout.max_new_tokens";
  return data::prompt_budget(cfg, key, eval_sampling(cfg).max_new_tokens, max_seq_len, model, /*for_eval=*/true);
}

std::string set_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const std::string ext : {".jsonl", ".json", ".parquet"})
    if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
      name.resize(name.size() - ext.size());
      break;
    }
  return name;
}

EvalSet::EvalSet(std::string name_in, std::string path_in, std::vector<data::Example> rows_in)
    : name(std::move(name_in)), path(std::move(path_in)), rows(std::move(rows_in)),
      competition(is_competition_set(rows)) {}

EvalSet load_eval_set(const config::Config& cfg, const std::string& path, const tokenizer::Tokenizer& tok,
                      int64_t max_prompt_tokens, bool loud) {
  int64_t file_rows = 0, outside_dates = 0;
  auto rows = data::load_jsonl(path, cfg.data.prompt_key, cfg.data.answer_key, true, cfg.data.source_key);
  if (rows.empty()) throw DataError("dataset '" + path + "' has no examples");
  file_rows = static_cast<int64_t>(rows.size());
  const auto& since = cfg.eval.since;
  const auto& until = cfg.eval.until;
  if (!since.empty() || !until.empty()) {
    std::vector<data::Example> kept;
    int64_t undated = 0;
    for (auto& ex : rows) {
      if (ex.date.empty()) ++undated;
      if (!ex.date.empty() && ((!since.empty() && ex.date < since) || (!until.empty() && ex.date > until))) {
        ++outside_dates;
        continue;
      }
      kept.push_back(std::move(ex));
    }
    if (undated == file_rows)
      throw DataError("dataset '" + path + "': eval.since/eval.until filter on contest_date, but no row has one");
    if (kept.empty())
      throw DataError("dataset '" + path + "': no row has a contest_date within [" + (since.empty() ? "-" : since) +
                      ", " + (until.empty() ? "-" : until) + "] (" + std::to_string(file_rows) + " rows)");
    rows = std::move(kept);
  }
  if (cfg.eval.max_problems > 0 && static_cast<int64_t>(rows.size()) > cfg.eval.max_problems)
    rows.resize(static_cast<size_t>(cfg.eval.max_problems));
  check_competition_set(rows);  // limits, checkers and repeated problems: refused before any sampling
  const int64_t total = static_cast<int64_t>(rows.size());
  auto fit = data::fit_prompts(std::move(rows), cfg.data, tok, max_prompt_tokens,
                               cfg.data.overlong_prompts == config::Overlong::kError,
                               tokenizer::chat_tools(cfg.tools.list));  // the prompts list the tools
  if (fit.dropped > 0 && loud)
    log::warn("{}: {}", set_name(path), data::describe_dropped(fit, total, max_prompt_tokens));
  EvalSet set(set_name(path), path, std::move(fit.kept));
  set.file_rows = file_rows;
  set.selected_rows = total;
  set.outside_dates = outside_dates;
  set.skipped_prompts = fit.dropped;
  return set;
}

}  // namespace gspo::eval
