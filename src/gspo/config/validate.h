// Cross-field rules and loss-dependent defaults, applied after all keys are read.
#pragma once
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::config {

// Replaces sentinels with their resolved values (clip ranges per loss).
void resolve_defaults(Config& cfg);

// Whether the reward uses verifier `kind`: reward.kind when reward.components is empty, else a component "name:W" of
// that name (the verifiers make_verifier builds).
bool uses_reward(const Config& cfg, RewardKind kind);

// Returns one message per broken cross-field rule, each naming the keys, their values and their lines.
std::vector<std::string> validate(const Config& cfg);

// Partial rollouts (async.partial_rollout): the groups kept being sampled (async.prompts_in_flight; 0 picks
// (S + 1) x B on the synchronous schedule, where batches are never sampled ahead, and min(2, S + 1) x B beside rollout
// ranks: one step of carry, the rest of the bound for running ahead), and how many batches a group may be carried past
// the one that began it (0 without partial rollouts).
int64_t prompts_in_flight(const Config& c);
int64_t carry_steps(const Config& c);

// algorithm.kl_coef > 0 with adapters that start from the base itself (model.lora_rank > 0, no model.adapter, no
// algorithm.reference_model): the KL reference is the policy's own frozen base with the adapters off, not a copy.
bool reference_is_base(const Config& c);
// distributed.optimizer_offload's rule, written once (config validation and train::choose_engine both ask it): the
// offloaded store is the sharded engines' (zero_stage 1 or 3; expert parallelism runs at 1). "" when `offload` is off
// or allowed, else the refusal naming the key.
std::string offload_refusal(bool offload, int64_t zero_stage);

// The prefix of an error about `key`: where it was set ("run.yaml:12: ", "--set: "), or "" for a default.
std::string set_at(const Config& cfg, const std::string& key);

}  // namespace gspo::config
