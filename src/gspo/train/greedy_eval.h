// Greedy accuracy of the current policy on a list of problems: what the end-of-run summary reports for the
// problems held out of training (data.holdout), so a demo's claim of learning is measured on unseen problems.
#pragma once
#include <vector>

#include "gspo/data/example.h"

namespace gspo::config { struct Config; }
namespace gspo::env { struct ToolEnv; }
namespace gspo::model { class Policy; }
namespace gspo::reward { class Verifier; }
namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::train {

// Fraction of `problems` answered correctly (the verifier's `correct`) by one greedy response each, sampled in
// batches of rollout.prompts_per_step with rollout.max_new_tokens, rollout.min_new_tokens and rollout.stop. 0 for an
// empty list. With `tools` (the run's), each response is an episode and its final turn is graded.
double greedy_accuracy(model::Policy& policy, const tokenizer::Tokenizer& tok, const reward::Verifier& verifier,
                       const std::vector<data::Example>& problems, const config::Config& cfg,
                       env::ToolEnv* tools = nullptr);

}  // namespace gspo::train
