#include "gspo/rollout/sampling_config.h"
#include "gspo/train/greedy_eval.h"

#include <algorithm>

#include "gspo/config/options.h"
#include "gspo/env/episode.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/model/policy.h"
#include "gspo/reward/verifier.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::train {

double greedy_accuracy(model::Policy& policy, const tokenizer::Tokenizer& tok, const reward::Verifier& verifier,
                       const std::vector<data::Example>& problems, const config::Config& cfg, env::ToolEnv* tools) {
  if (problems.empty()) return 0;
  auto sp = rollout::sampling_params(cfg);  // greedy: temperature 0, no top-k/top-p; no CUDA graphs as before
  sp.temperature = 0.0;
  sp.top_p = 1.0;
  sp.top_k = 0;
  sp.cuda_graphs = config::CudaGraphs::kOff;
  rollout::Sampler greedy(policy, tok, sp);
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, cfg.rollout.prompts_per_step));
  int64_t correct = 0;
  for (size_t start = 0; start < problems.size(); start += chunk) {
    const size_t end = std::min(problems.size(), start + chunk);
    std::vector<std::vector<int64_t>> prompts;
    std::vector<std::string> questions;
    for (size_t i = start; i < end; ++i) {
      prompts.push_back(tok.encode_prompt(data::format_prompt(cfg.data, problems[i], env::shown_tools(tools))));
      questions.push_back(problems[i].prompt);
    }
    const auto sampled = env::sample(tools, greedy, prompts, std::move(questions), 1, {0, static_cast<int64_t>(start)});
    std::vector<const data::Example*> exs;
    for (size_t i = start; i < end; ++i) exs.push_back(&problems[i]);
    for (const auto& sc : reward::score_all(verifier, sampled.graded(), exs, cfg.reward.workers, sampled.tool_use()))
      correct += sc.correct ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(problems.size());
}

}  // namespace gspo::train
