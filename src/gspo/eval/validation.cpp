#include "gspo/eval/validation.h"

#include <torch/torch.h>

#include <cmath>
#include <optional>

#include "gspo/core/error.h"
#include "gspo/eval/sharded.h"
#include "gspo/eval/standings.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/factory.h"

namespace gspo::eval {
namespace {

std::vector<std::optional<int64_t>> accepted_at(const std::vector<ProblemStats>& problems) {
  std::vector<std::optional<int64_t>> out;
  for (const auto& p : problems)
    out.push_back(p.first_accepted >= 0 ? std::optional<int64_t>(p.first_accepted) : std::nullopt);
  return out;
}

}  // namespace

Validation::Validation(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok,
                       int64_t max_seq_len, parallel::Comm& comm, const reward::Verifier& scorer)
    : cfg_(cfg), comm_(comm), evaluator_(cfg, policy, tok) {
  const int64_t max_prompt_tokens = eval_prompt_budget(cfg, max_seq_len, cfg.model.path);
  const bool share = reward::scores_with_models(cfg);
  for (const auto& path : cfg.eval.datasets) {
    sets_.push_back(load_eval_set(cfg, path, tok, max_prompt_tokens, comm.is_main()));
    graders_.push_back(share ? std::make_unique<Grader>(cfg, sets_.back().rows, scorer)
                             : std::make_unique<Grader>(cfg, sets_.back().rows));
  }
  if (cfg.eval.standings.empty()) return;
  standings_ = std::make_unique<StandingsPack>(load_standings(cfg.eval.standings));
  try {
    check_standings(*standings_, sets_);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("eval.standings: ") + e.what());
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
    std::vector<ProblemStats> problems;
    auto s = evaluate_sharded(evaluator_, sets_[d], d, *graders_[d], comm_, &problems);
    if (standings_ && graders_[d]->competition)
      s["codeelo"] = codeelo_summary(*standings_, example_pointers(sets_[d].rows), accepted_at(problems));
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
  for (const auto& s : summaries)
    if (s.contains("codeelo")) j["val/" + s["dataset"].get<std::string>() + "/codeelo_rating"] = s["codeelo"]["rating"];
  return j;
}

std::string Validation::one_line(const std::vector<nlohmann::ordered_json>& summaries) {
  std::string out;
  for (const auto& s : summaries) {
    out += (out.empty() ? "" : " | ") + s["dataset"].get<std::string>() + " " + accuracy_cells(s);
    if (s.contains("codeelo")) out += " CodeElo " + std::to_string(std::lround(s["codeelo"]["rating"].get<double>()));
  }
  return out;
}

}  // namespace gspo::eval
