#include "gspo/eval/evaluator.h"

#include <algorithm>

#include "gspo/data/dataset.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::eval {

Evaluator::Evaluator(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok)
    : cfg_(cfg),
      tok_(tok),
      sampler_(std::make_unique<rollout::Sampler>(policy, tok, eval_sampling(cfg))),
      samples_(cfg.eval.samples),
      chunk_(static_cast<size_t>(std::max<int64_t>(1, cfg.rollout.prompts_per_step))) {}

Evaluator::~Evaluator() = default;

Evaluator::Graded Evaluator::run(const EvalSet& set, size_t set_index, const Grader& grader, size_t begin, size_t end) {
  const int64_t K = samples_;
  std::vector<std::vector<int64_t>> prompts;
  std::vector<const data::Example*> exs;
  for (size_t i = begin; i < end; ++i) {
    prompts.push_back(tok_.encode_prompt(data::format_prompt(cfg_.data, set.rows[i].prompt)));
    exs.push_back(&set.rows[i]);
  }
  const rollout::NoiseKey noise{rollout::mix_seed(static_cast<uint64_t>(cfg_.rollout.seed), set_index),
                                static_cast<int64_t>(begin) * K};
  auto batch = sampler_->generate(prompts, K, noise);
  std::vector<std::vector<std::string>> texts(exs.size());
  std::vector<std::vector<int64_t>> lens(exs.size());
  const auto own = batch.trained_tokens();  // the model's tokens (a tool's are not)
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    texts[r / K].push_back(batch.response_text[r]);
    lens[r / K].push_back(own[r]);
  }
  Graded out;
  out.problems = grader.grade(exs, texts, lens);
  for (size_t i = 0; i < exs.size(); ++i)
    for (int64_t s = 0; s < K; ++s) {
      const auto& p = out.problems[i];
      out.sample_lines.push_back(
          {{"dataset", set.name}, {"index", begin + i}, {"id", exs[i]->id}, {"sample", s}, {"response", texts[i][s]},
           {"reward", p.rewards[s]}, {"correct", static_cast<bool>(p.correct[s])}, {"failure", p.failures[s]},
           {"detail", p.details[s]}, {"tokens", lens[i][s]}, {"finish", rollout::finish_name(batch.finish[i * K + s])}});
    }
  return out;
}

}  // namespace gspo::eval
