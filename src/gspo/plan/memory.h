// gspo plan's memory model: the bytes one rank holds in each phase of a training step (rollout, old log-probs,
// update), part by part, from a model's shape and a config. Pure arithmetic, no tensors. The formulas are written
// out in docs/distributed.md ("Planning memory") and checked against measured peaks by
// tests/plan/test_plan_measured.sh.
// Non-goals: the allocator's fragmentation, and kv_cache_fraction's budget (it depends on the memory free at run time).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/plan/model_shape.h"
#include "gspo/plan/plan_types.h"

namespace gspo::plan {

// The process's own resident memory with no model to speak of: the peak RSS of `gspo train` on a 0.16M-parameter
// model (scripts/make_tiny_model.py's default, configs/tiny.yaml, 2 steps of 3 tokens) read 464 MB on the development
// VM (2026-11-30, LibTorch 2.11 CPU, huge pages on; 418 MB on 2026-11-23: the binary and what it loads grew), of which
// 2 MB is that model's state: LibTorch's libraries, the binary, the tokenizer and data. tests/plan/test_plan_measured.sh
// measures it again on every run and fails beyond 25%. On a GPU the allocator's peak (peak_gpu_mb) excludes it; the
// CUDA context (~0.5 GB) takes its place.
inline constexpr double kRuntimeMb = 460.0;

// distributed.optimizer_offload at start-up: ConfigError naming the key and the numbers when `ranks_on_node` ranks of
// plan `p` need more host memory than `available_bytes` (MemAvailable, host_available_bytes()); else nothing.
void check_offload_host_memory(const MemoryPlan& p, int64_t ranks_on_node, double available_bytes);
// The host memory available to new allocations: MemAvailable of /proc/meminfo (sysconf's free pages where it is
// absent). GSPO_HOST_AVAILABLE_MB, when set, replaces it (tests; a way to leave room for other processes).
double host_available_bytes();

// ConfigError when the inputs cannot describe a run (world size not dividing prompts_per_step, ...). With
// distributed.rollout_ranks K > 0, a training rank of the W - K (no KV cache: its rollout phase is the weight sync).
MemoryPlan plan_memory(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in);
// With distributed.rollout_ranks K > 0: a rollout rank (the policy in the rollout dtype, its share of the batch's KV
// cache, no training state; docs/async.md).
MemoryPlan plan_rollout_rank(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in);

// What a rank that scores holds for the model rewards in use (reward_memory.cpp, from each scorer's row): its frozen
// weights (the row's name: "reward model", "judge"; bfloat16 on CUDA under model_dtype auto), and one pass of
// reward.model_batch_tokens tokens as a phase of its own on top of `resident` (the row's phase and term: "reward
// scoring" / "reward model scoring pass"; "judging" / "judge pass", whose KV cache a verdict's prefill and a
// judgement's sampling both fill).
std::vector<Term> scoring_resident_terms(const config::Config& cfg, const PlanInputs& in);
std::vector<std::pair<std::string, Term>> scoring_pass_terms(const config::Config& cfg, const PlanInputs& in);

// On-policy distillation (PlanInputs::teacher): the teacher's frozen weights on every training rank (distill.dtype),
// and its pass over one micro-batch of `micro_tokens` tokens (a layer's working set at once, and the head's
// `head_tokens` positions x vocab, as the student's old-log-prob pass): empty without a teacher.
std::vector<Term> teacher_resident_terms(const config::Config& cfg, const PlanInputs& in);
std::vector<Term> teacher_pass_terms(const config::Config& cfg, const PlanInputs& in, double micro_tokens,
                                     double head_tokens, const std::string& head_what);

// Activation bytes one token leaves for backward in one decoder layer (no checkpointing), and the transient bytes
// of one layer's forward without autograd; `bytes` is the training dtype's size.
double layer_saved_bytes_per_token(const ModelShape& s, int64_t layer, double bytes);
double layer_nograd_bytes_per_token(const ModelShape& s, int64_t layer, double bytes);

}  // namespace gspo::plan
