// Grading K responses of one problem: scores, majority-vote keys, maj@K correctness.
#pragma once
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "gspo/data/example.h"
#include "gspo/eval/summary.h"
#include "gspo/reward/math/math.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::config { struct Config; }

namespace gspo::eval {

// The config a set's verifier grades with (eval.datasets[].verifier): `cfg` itself for "reward" (the run's reward
// section, components and scorers included), else `cfg` with reward.kind that rule verifier ("auto": by the set's
// rows) and no components. ConfigError for a name that is no verifier.
config::Config grading_config(const config::Config& cfg, const std::string& verifier);

struct Grader {
  std::shared_ptr<const reward::Verifier> verifier;  // its own, or one it shares (validation: training's scorer)
  bool math = false;   // majority voting applies
  reward::MathOptions math_options;  // the math verifier's, for voting
  int64_t workers = 0;

  // `cfg` with its dataset's rows decides the verifier (reward.kind auto: code when rows carry tests).
  // `device`: where a model reward runs (reward.kind or component "model").
  Grader(const config::Config& cfg, const std::vector<data::Example>& rows, c10::Device device = c10::Device(c10::kCPU));
  // Grades with `shared` (not owned; it outlives the grader) instead of a verifier of its own.
  Grader(const config::Config& cfg, const reward::Verifier& shared);
  // Grades responses[i][s] (problem i, sample s); tokens[i][s] may be empty. With `uses` (episodes with tools:
  // responses are final turns), one tool use per response in that order (problem-major), kept in each
  // ProblemResult's tool_use.
  std::vector<ProblemResult> grade(const std::vector<const data::Example*>& problems,
                                   const std::vector<std::vector<std::string>>& responses,
                                   const std::vector<std::vector<int64_t>>& tokens,
                                   const std::vector<reward::ToolUse>* uses = nullptr) const;
  // Math only: fills p.votes from the responses and p.majority_correct against the problem's answer (used again
  // when an interrupted eval's samples are read back).
  void vote(ProblemResult& p, const std::vector<std::string>& responses, const data::Example& problem) const;

 private:
  Grader(const config::Config& cfg, std::shared_ptr<const reward::Verifier> v);
};

}  // namespace gspo::eval
