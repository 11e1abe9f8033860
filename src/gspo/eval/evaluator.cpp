#include "gspo/eval/evaluator.h"

#include <algorithm>

#include "gspo/data/dataset.h"
#include "gspo/eval/competition.h"
#include "gspo/env/episode.h"
#include "gspo/model/expert_runner.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::eval {

Evaluator::Evaluator(const config::Config& cfg, model::Policy& policy, const tokenizer::Tokenizer& tok)
    : cfg_(cfg),
      tok_(tok),
      sampler_(std::make_unique<rollout::Sampler>(policy, tok, eval_sampling(cfg))),
      tools_(env::make_tool_env(cfg, tok, policy)),
      samples_(cfg.eval.samples),
      chunk_(static_cast<size_t>(std::max<int64_t>(1, cfg.rollout.prompts_per_step))) {}

Evaluator::~Evaluator() = default;

model::SamplingPhase Evaluator::sampling_phase() { return model::SamplingPhase(sampler_->policy()); }

Evaluator::Graded Evaluator::run(const EvalSet& set, size_t set_index, const Grader& grader, size_t begin, size_t end) {
  const int64_t K = samples_;
  std::vector<std::vector<int64_t>> prompts;
  std::vector<const data::Example*> exs;
  std::vector<std::string> questions;
  for (size_t i = begin; i < end; ++i) {
    prompts.push_back(tok_.encode_prompt(data::format_prompt(cfg_.data, set.rows[i], env::shown_tools(tools_.get()))));
    exs.push_back(&set.rows[i]);
    questions.push_back(set.rows[i].prompt);
  }
  const rollout::NoiseKey noise{rollout::mix_seed(static_cast<uint64_t>(cfg_.rollout.seed), set_index),
                                static_cast<int64_t>(begin) * K};
  // With tools the final assistant turn is graded (and voted on), the whole episode kept in samples.jsonl.
  const auto sampled = env::sample(tools_.get(), *sampler_, prompts, std::move(questions), K, noise);
  const auto& batch = sampled.batch;
  const auto& graded = sampled.graded();
  std::vector<std::vector<std::string>> texts(exs.size());
  std::vector<std::vector<int64_t>> lens(exs.size());
  const auto own = batch.trained_tokens();  // the model's tokens (a tool's are not)
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    texts[r / K].push_back(graded[r]);
    lens[r / K].push_back(own[r]);
  }
  Graded out;
  out.problems = grader.grade(exs, texts, lens, sampled.tool_use());
  for (size_t i = 0; i < exs.size(); ++i)
    for (int64_t s = 0; s < K; ++s) {
      const auto& p = out.problems[i];
      const int64_t r = static_cast<int64_t>(i) * K + s;
      nlohmann::ordered_json line{
          {"dataset", set.name}, {"index", begin + i}, {"id", exs[i]->id}, {"sample", s},
          {"response", batch.response_text[r]}, {"reward", p.rewards[s]}, {"correct", static_cast<bool>(p.correct[s])},
          {"failure", p.failures[s]}, {"detail", p.details[s]}, {"tokens", lens[i][s]},
          {"finish", rollout::finish_name(batch.finish[r])}};
      if (set.competition) add_attempt_fields(line, p, static_cast<size_t>(s));
      if (tools_) {
        const auto& u = sampled.uses[r];
        line["final_turn"] = texts[i][s];
        line["tool_turns"] = u.turns, line["tool_calls"] = u.calls, line["tool_errors"] = u.errors;
        line["tool_timeouts"] = u.timeouts;
      }
      out.sample_lines.push_back(std::move(line));
    }
  return out;
}

}  // namespace gspo::eval
