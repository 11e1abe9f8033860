#include "gspo/eval/validation.h"

#include <torch/torch.h>

#include "gspo/parallel/comm.h"
#include "gspo/eval/sharded.h"

namespace gspo::eval {

Validation::Validation(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok,
                       int64_t max_seq_len, parallel::Comm& comm)
    : cfg_(cfg), comm_(comm), evaluator_(cfg, policy, tok) {
  const int64_t max_prompt_tokens = eval_prompt_budget(cfg, max_seq_len, cfg.model.path);
  for (const auto& path : cfg.eval.datasets) {
    sets_.push_back(load_eval_set(cfg, path, tok, max_prompt_tokens, comm.is_main()));
    graders_.push_back(std::make_unique<Grader>(cfg, sets_.back().rows));
  }
}

Validation::~Validation() = default;

bool Validation::due(int64_t step, int64_t max_steps) const {
  return cfg_.eval.every > 0 && (step % cfg_.eval.every == 0 || step == max_steps);
}

std::vector<nlohmann::ordered_json> Validation::run() {
  torch::NoGradGuard no_grad;
  std::vector<nlohmann::ordered_json> out;
  for (size_t d = 0; d < sets_.size(); ++d) {
    auto s = evaluate_sharded(evaluator_, sets_[d], d, *graders_[d], comm_);
    s["skipped_prompts"] = sets_[d].skipped_prompts;
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::ordered_json Validation::headline(const std::vector<nlohmann::ordered_json>& summaries) {
  nlohmann::ordered_json j;
  for (const auto& s : summaries)
    for (const auto& [k, v] : s.items())
      if (k.find('@') != std::string::npos) j["val/" + s["dataset"].get<std::string>() + "/" + k] = v;
  return j;
}

std::string Validation::one_line(const std::vector<nlohmann::ordered_json>& summaries) {
  std::string out;
  for (const auto& s : summaries)
    out += (out.empty() ? "" : " | ") + s["dataset"].get<std::string>() + " " + accuracy_cells(s);
  return out;
}

}  // namespace gspo::eval
