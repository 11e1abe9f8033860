// The rollout section of a config as the sampler's parameters, and the dtype sampling runs in: the rollout's rules, in
// its layer (the trainer, a rollout rank, greedy evaluation and eval's own sampling all start from them).
#pragma once
#include <c10/core/ScalarType.h>

#include "gspo/config/options.h"
#include "gspo/rollout/sampler.h"

namespace gspo::rollout {

// rollout.*: sampling, length, CUDA graphs, the KV budget and continuous batching of the training rollouts.
SamplingParams sampling_params(const config::Config& cfg);

// The dtype a sampling copy or a rollout rank samples in: bf16 when rollout.dtype or model.dtype asks for it.
c10::ScalarType sampling_dtype(const config::Config& cfg);

}  // namespace gspo::rollout
