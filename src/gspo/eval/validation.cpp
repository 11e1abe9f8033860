#include "gspo/eval/validation.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/eval/sharded.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/factory.h"

namespace gspo::eval {

Validation::Validation(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok,
                       int64_t max_seq_len, parallel::Comm& comm, const reward::Verifier& scorer)
    : cfg_(cfg), comm_(comm), evaluator_(cfg, policy, tok) {
  const int64_t max_prompt_tokens = eval_prompt_budget(cfg, max_seq_len, cfg.model.path);
  for (const auto& spec : cfg.eval.datasets) {
    sets_.push_back(load_eval_set(cfg, spec.path, tok, max_prompt_tokens, comm.is_main()));
    // The training reward with a reward model or a judge: training's one scorer, on the training device.
    const bool share = spec.verifier == "reward" && reward::scores_with_models(cfg);
    graders_.push_back(share ? std::make_unique<Grader>(cfg, scorer)
                             : std::make_unique<Grader>(grading_config(cfg, spec.verifier), sets_.back().rows));
  }
  standings_ = Standings(cfg.eval.standings);  // read after the sets: a bad set file is named before a bad pack
  try {
    standings_.check(sets_);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("eval.standings: ") + e.what());
  }
}

Validation::~Validation() = default;

bool Validation::due(int64_t step, int64_t max_steps) const {
  return cfg_.eval.every > 0 && (step % cfg_.eval.every == 0 || step == max_steps);
}

std::vector<SetSummary> Validation::run(std::string* samples) {
  torch::NoGradGuard no_grad;
  std::vector<SetSummary> out;
  for (size_t d = 0; d < sets_.size(); ++d) {
    auto s = evaluate_sharded(evaluator_, sets_[d], d, *graders_[d], standings_, comm_, nullptr, samples);
    s.skipped_prompts = sets_[d].skipped_prompts;
    s.verifier = graders_[d]->verifier->name();
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::ordered_json Validation::headline(const std::vector<SetSummary>& summaries) {
  nlohmann::ordered_json j;
  for (const auto& s : summaries)
    for (const auto& [k, v] : named_figures(s.accuracy)) j["val/" + s.dataset + "/" + k] = v;
  for (const auto& s : summaries)
    if (s.codeelo) j["val/" + s.dataset + "/codeelo_rating"] = s.codeelo->rating;
  return j;
}

std::string Validation::one_line(const std::vector<SetSummary>& summaries) {
  std::string out;
  for (const auto& s : summaries) {
    out += (out.empty() ? "" : " | ") + s.dataset + " " + accuracy_cells(s.accuracy);
    if (s.codeelo) out += " CodeElo " + std::to_string(std::lround(s.codeelo->rating));
  }
  return out;
}

}  // namespace gspo::eval
