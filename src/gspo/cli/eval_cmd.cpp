#include "gspo/cli/eval_cmd.h"

#include <iostream>

#include "gspo/config/load.h"
#include "gspo/core/log.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/summary.h"
#include "gspo/io/model_ref.h"

namespace gspo::cli {

int eval(const EvalArgs& a) {
  auto overrides = a.overrides;  // the flags are shorthands for eval.* keys, validated with the rest of the config
  if (a.samples > 0) overrides.push_back("eval.samples=" + std::to_string(a.samples));
  if (a.max_problems >= 0) overrides.push_back("eval.max_problems=" + std::to_string(a.max_problems));
  if (!a.since.empty()) overrides.push_back("eval.since=" + a.since);
  if (!a.until.empty()) overrides.push_back("eval.until=" + a.until);
  auto cfg = config::load(a.config, overrides);
  if (!a.adapter.empty()) cfg.model.adapter = a.adapter;  // (paths: kept out of --set's YAML parsing)
  if (!a.standings.empty()) cfg.eval.standings = a.standings;
  log::set_level_from_config(config::name_of(cfg.logging.level));
  std::string model = a.model;
  if (!model.empty()) {  // a run or checkpoint directory: what it last saved
    const auto ref = io::resolve_model_ref(model, cfg.model.adapter);
    model = ref.model;
    cfg.model.adapter = ref.adapter;
  }
  eval::EvalRequest req{model, a.datasets, a.out, !a.no_progress, a.overwrite, cfg.eval.standings};
  auto summaries = eval::run_eval(cfg, req);
  std::cout << eval::format_table(summaries) << "samples: " << a.out << "/samples.jsonl, summary: " << a.out
            << "/summary.json\n";
  return 0;
}

int score(const ScoreArgs& a) {
  auto overrides = a.overrides;
  if (!a.reward.empty()) overrides.push_back("reward.kind=" + a.reward);
  auto cfg = config::load(a.config, overrides);
  log::set_level_from_config(config::name_of(cfg.logging.level));
  auto summary = eval::run_score(cfg, {a.dataset, a.responses, a.out, a.standings});
  if (a.json) std::cout << nlohmann::ordered_json(summary).dump() << "\n";
  else std::cout << eval::format_table({summary});
  return 0;
}

}  // namespace gspo::cli
