#include "gspo/eval/grade.h"

#include "gspo/config/options.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/factory.h"
#include "gspo/reward/math/math.h"

namespace gspo::eval {

namespace {
config::Config eval_config(const config::Config& cfg_in) {
  config::Config cfg = cfg_in;
  cfg.data.task = config::Task::kJsonl;
  return cfg;
}
}  // namespace

config::Config grading_config(const config::Config& cfg, const std::string& verifier) {
  if (verifier == "reward") return cfg;
  config::Config out = cfg;
  const auto kind = config::parse_choice<config::RewardKind>(verifier);
  if (!kind) throw ConfigError("eval.datasets[].verifier '" + verifier + "' names no verifier");
  out.reward.kind = *kind;
  out.reward.components.clear();
  return out;
}

Grader::Grader(const config::Config& cfg, const std::vector<data::Example>& rows, c10::Device device)
    : Grader(cfg, std::shared_ptr<const reward::Verifier>(reward::make_verifier(eval_config(cfg), rows, device))) {}

Grader::Grader(const config::Config& cfg, const reward::Verifier& shared)
    : Grader(cfg, std::shared_ptr<const reward::Verifier>(std::shared_ptr<const reward::Verifier>(), &shared)) {}

Grader::Grader(const config::Config& cfg, std::shared_ptr<const reward::Verifier> v)
    : verifier(std::move(v)) {
  const auto parts = verifier->parts();  // a weighted sum votes as its first part
  math = (parts.empty() ? *verifier : *parts.front().verifier).kind() == config::RewardKind::kMath;
  if (math) math_options = reward::math_options(eval_config(cfg));
  workers = cfg.reward.workers;
}

std::vector<ProblemResult> Grader::grade(const std::vector<const data::Example*>& problems,
                                         const std::vector<std::vector<std::string>>& responses,
                                         const std::vector<std::vector<int64_t>>& tokens,
                                         const std::vector<reward::ToolUse>* uses) const {
  std::vector<std::string> flat;
  std::vector<const data::Example*> flat_ex;
  for (size_t i = 0; i < problems.size(); ++i)
    for (const auto& r : responses[i]) {
      flat.push_back(r);
      flat_ex.push_back(problems[i]);
    }
  auto scores = reward::score_all(*verifier, flat, flat_ex, workers, uses);
  std::vector<ProblemResult> out(problems.size());
  size_t k = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    auto& p = out[i];
    for (size_t s = 0; s < responses[i].size(); ++s, ++k) {
      p.correct.push_back(scores[k].correct);
      p.rewards.push_back(scores[k].reward);
      p.details.push_back(scores[k].detail);
      p.failures.push_back(scores[k].correct ? "" : scores[k].failure.empty() ? "wrong answer" : scores[k].failure);
      p.tokens.push_back(s < tokens[i].size() ? tokens[i][s] : 0);
      if (uses) p.tool_use.push_back(uses->at(k));
    }
    p.difficulty = problems[i]->difficulty;
    p.source = problems[i]->source;
    vote(p, responses[i], *problems[i]);
  }
  return out;
}

void Grader::vote(ProblemResult& p, const std::vector<std::string>& responses, const data::Example& problem) const {
  if (!math) return;
  reward::MathVerifier voter(math_options);
  p.votes.clear();
  for (const auto& r : responses) p.votes.push_back(voter.voting_key(r));
  const std::string winner = majority_vote(p.votes);
  const auto gold = reward::reference_answer(problem.answer, math_options.gold);
  p.majority_correct = !winner.empty() && gold && reward::answers_equivalent(winner, *gold, math_options.rel_tol);
}

}  // namespace gspo::eval
