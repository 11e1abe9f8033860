// Model rewards' memory in gspo plan (declared in plan/memory.h): a reward model's or a judge's frozen weights on every
// rank that scores, and one pass's working set.
#include <algorithm>

#include "gspo/core/device.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/plan_text.h"

namespace gspo::plan {
namespace {

// A model reward (reward.model_path): bytes a parameter of its frozen weights (model_dtype auto: bfloat16 on CUDA).
double reward_bytes(const config::Config& cfg) {
  switch (cfg.reward.model_dtype) {
    case config::ScoreDtype::kFloat32: return 4;
    case config::ScoreDtype::kBFloat16: return 2;
    case config::ScoreDtype::kAuto: break;
  }
  return core::device_type(cfg.model.device, /*cuda_available=*/true, "model.device") == c10::kCPU ? 4 : 2;
}

}  // namespace

// Its weights, held beside the policy on every rank that scores (and validates).
Term reward_weights_term(const ModelShape& rm, const config::Config& cfg) {
  const double b = reward_bytes(cfg), n = static_cast<double>(reward_model_parameters(rm));
  return {"reward model", n * b, num(n) + " params x " + num(b) + " B (reward.model_path, frozen, no gradient state)"};
}

// A layer's working set per token of a pass: the residual stream and its normed copy, q/k/v and the attention output,
// the SwiGLU's gate, up and product (freed layer by layer).
double pass_width(const ModelShape& m) {
  const double qkv = static_cast<double>((m.num_heads + 2 * m.num_kv_heads) * m.head_dim);
  return 2.0 * m.hidden_size + qkv + static_cast<double>(m.num_heads * m.head_dim) +
         3.0 * std::max(m.intermediate_size, m.moe_intermediate_size);
}

// One scoring pass (reward.model_batch_tokens tokens): a layer's working set at once; freed layer by layer, and before
// the step's log-prob pass.
Term reward_pass_term(const ModelShape& rm, const config::Config& cfg) {
  const double b = reward_bytes(cfg), t = static_cast<double>(cfg.reward.model_batch_tokens), width = pass_width(rm);
  return {"reward model scoring pass", t * width * b, num(t) + " tokens (reward.model_batch_tokens) x " + num(width) +
          " (2H + q/k/v + attention out + 3 x intermediate) x " + num(b) + " B"};
}

Term judge_weights_term(const ModelShape& judge, const config::Config& cfg) {
  const double b = reward_bytes(cfg), n = static_cast<double>(judge.num_parameters());
  return {"judge", n * b, num(n) + " params x " + num(b) + " B (reward.judge_path, frozen, no gradient state)"};
}

// A verdict's prefill and a judgement's sampling hold the pass's KV cache (every layer's keys and values of its tokens,
// the judgement's own included: the passes are cut to the budget with them) besides a layer's working set.
Term judge_pass_term(const ModelShape& judge, const config::Config& cfg) {
  const double b = reward_bytes(cfg), t = static_cast<double>(cfg.reward.model_batch_tokens), width = pass_width(judge);
  const double kv = 2.0 * static_cast<double>(judge.num_layers * judge.num_kv_heads * judge.head_dim);
  return {"judge pass", t * (width + kv) * b, num(t) + " tokens (reward.model_batch_tokens) x (" + num(width) +
          " working set + " + num(kv) + " KV cache: 2 x layers x KV heads x head dim) x " + num(b) + " B"};
}

std::vector<Term> scoring_resident_terms(const config::Config& cfg, const PlanInputs& in) {
  std::vector<Term> t;
  if (in.reward_model) t.push_back(reward_weights_term(*in.reward_model, cfg));
  if (in.judge) t.push_back(judge_weights_term(*in.judge, cfg));
  return t;
}

std::vector<std::pair<std::string, Term>> scoring_pass_terms(const config::Config& cfg, const PlanInputs& in) {
  std::vector<std::pair<std::string, Term>> t;
  if (in.reward_model) t.emplace_back("reward scoring", reward_pass_term(*in.reward_model, cfg));
  if (in.judge) t.emplace_back("judging", judge_pass_term(*in.judge, cfg));
  return t;
}

}  // namespace gspo::plan
