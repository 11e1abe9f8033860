// The prompts a training run samples: the dataset's rows that leave room for rollout.max_new_tokens (a pure function
// of data, tokenizer and config, so every rank and a resumed run see the same rows).
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"

namespace gspo::model { class Policy; }
namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::train {

// Drops (or, data.overlong_prompts error, refuses) prompts that leave no room for max_new_tokens; `loud` logs what
// was dropped; `dropped` counts it.
std::vector<data::Example> fit_training_rows(std::vector<data::Example> rows, const config::Config& c,
                                             const tokenizer::Tokenizer& tok, const model::Policy& policy, bool loud,
                                             int64_t& dropped);

}  // namespace gspo::train
