// Sampling K responses for a range of an eval set's problems and grading them: the one path shared by `gspo eval`
// (run_eval.cpp) and validation during training (validation.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/config/options.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/eval/grade.h"
#include "gspo/eval/summary.h"
#include "gspo/model/sampling_phase.h"

namespace gspo::env { struct ToolEnv; }
namespace gspo::model { class Policy; }
namespace gspo::rollout { class Sampler; }
namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::eval {

class Evaluator {
 public:
  // Samples with eval_sampling(cfg) from `policy` (not owned; outlives the Evaluator), cfg.eval.samples per problem;
  // with tools.list set, episodes with the run's tools (their programs started here).
  Evaluator(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok);
  ~Evaluator();

  struct Graded {
    std::vector<ProblemResult> problems;                // problems [begin, end)
    std::vector<nlohmann::ordered_json> sample_lines;   // samples.jsonl lines, problem-major
  };
  // Problems [begin, end) of `set`; `set_index` keys the sampling noise with rollout.seed, and every sample's noise
  // depends only on (seed, set_index, problem index, sample index): results do not depend on how the problems are
  // cut into calls (batch size, resume point, ranks), up to floating-point differences across batch shapes.
  Graded run(const EvalSet& set, size_t set_index, const Grader& grader, size_t begin, size_t end);

  // A sampling phase of this evaluator's policy (model/sampling_phase.h): its end, when it goes out of scope, is a
  // collective over the expert group when the policy samples with its experts on other ranks, nothing otherwise.
  // Every rank closes it at the same point.
  model::SamplingPhase sampling_phase();

  int64_t samples() const { return samples_; }
  // Problems per sampling call: rollout.prompts_per_step.
  size_t chunk() const { return chunk_; }

 private:
  const config::Config& cfg_;
  const tokenizer::Tokenizer& tok_;
  std::unique_ptr<rollout::Sampler> sampler_;
  std::unique_ptr<env::ToolEnv> tools_;  // tools.list set: each sample is an episode, its final turn graded
  int64_t samples_;
  size_t chunk_;
};

}  // namespace gspo::eval
