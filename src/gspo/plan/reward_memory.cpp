// Model rewards' memory in gspo plan (declared in plan/memory.h): each model-backed scorer's frozen weights on every
// rank that scores, and one pass's working set, as its row (reward/scorers/scorer_table.h) describes it.
#include <algorithm>
#include <stdexcept>

#include "gspo/core/device.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/plan_text.h"
#include "gspo/reward/scorers/scorer_table.h"

namespace gspo::plan {
namespace {

// A model-backed scorer: bytes a parameter of its frozen weights (reward.model_dtype; auto: bfloat16 on CUDA).
double frozen_bytes(config::ScoreDtype dtype, const config::Config& cfg) {
  switch (dtype) {
    case config::ScoreDtype::kFloat32: return 4;
    case config::ScoreDtype::kBFloat16: return 2;
    case config::ScoreDtype::kAuto: break;
  }
  return core::device_type(cfg.model.device, /*cuda_available=*/true, "model.device") == c10::kCPU ? 4 : 2;
}

double reward_bytes(const config::Config& cfg) { return frozen_bytes(cfg.reward.scorer.dtype, cfg); }

// Its weights, held beside the policy on every rank that scores (and validates).
Term weights_term(const reward::ModelScorerRow& row, const ModelShape& m, const config::Config& cfg) {
  const bool reward_head = row.head == io::ModelLoad::Head::kReward;  // (a score head: no LM head)
  const double b = reward_bytes(cfg);
  const double n = static_cast<double>(reward_head ? reward_model_parameters(m) : m.num_parameters());
  return {row.what, n * b, num(n) + " params x " + num(b) + " B (" + row.path_key + ", frozen, no gradient state)"};
}

// A layer's working set per token of a pass: the residual stream and its normed copy, q/k/v and the attention output,
// the SwiGLU's gate, up and product (freed layer by layer).
double pass_width(const ModelShape& m) {
  const double qkv = static_cast<double>((m.num_heads + 2 * m.num_kv_heads) * m.head_dim);
  return 2.0 * m.hidden_size + qkv + static_cast<double>(m.num_heads * m.head_dim) +
         3.0 * std::max(m.intermediate_size, m.moe_intermediate_size);
}

// One scoring pass (reward.model_batch_tokens tokens): a layer's working set at once, freed layer by layer, and before
// the step's log-prob pass; a pass that prefills or samples (a judge's) also holds its KV cache (every layer's keys and
// values of its tokens, a judgement's own included: the passes are cut to the budget with them).
Term pass_term(const reward::ModelScorerRow& row, const ModelShape& m, const config::Config& cfg) {
  const double b = reward_bytes(cfg), t = static_cast<double>(cfg.reward.scorer.batch_tokens), width = pass_width(m);
  if (!row.pass_holds_kv_cache)
    return {row.pass_term, t * width * b, num(t) + " tokens (reward.model_batch_tokens) x " + num(width) +
            " (2H + q/k/v + attention out + 3 x intermediate) x " + num(b) + " B"};
  const double kv = 2.0 * static_cast<double>(m.num_layers * m.num_kv_heads * m.head_dim);
  return {row.pass_term, t * (width + kv) * b, num(t) + " tokens (reward.model_batch_tokens) x (" + num(width) +
          " working set + " + num(kv) + " KV cache: 2 x layers x KV heads x head dim) x " + num(b) + " B"};
}

const reward::ModelScorerRow& row_of(const ScorerShape& s) {
  const auto* row = reward::model_scorer(s.kind);
  if (!row) throw std::invalid_argument("PlanInputs::scorers: a reward kind that runs no model");
  return *row;
}

}  // namespace

std::vector<Term> scoring_resident_terms(const config::Config& cfg, const PlanInputs& in) {
  std::vector<Term> t;
  for (const auto& s : in.scorers) t.push_back(weights_term(row_of(s), s.shape, cfg));
  return t;
}

std::vector<std::pair<std::string, Term>> scoring_pass_terms(const config::Config& cfg, const PlanInputs& in) {
  std::vector<std::pair<std::string, Term>> t;
  for (const auto& s : in.scorers) t.emplace_back(row_of(s).pass_phase, pass_term(row_of(s), s.shape, cfg));
  return t;
}

std::vector<Term> teacher_resident_terms(const config::Config& cfg, const PlanInputs& in) {
  if (!in.teacher) return {};
  const double b = frozen_bytes(cfg.distill.dtype, cfg), n = static_cast<double>(in.teacher->num_parameters());
  return {{"distillation teacher", n * b, num(n) + " params x " + num(b) + " B (distill.teacher in distill.dtype, "
           "frozen, whole on every training rank)"}};
}

std::vector<Term> teacher_pass_terms(const config::Config& cfg, const PlanInputs& in, double micro_tokens,
                                     double head_tokens, const std::string& head_what) {
  if (!in.teacher) return {};
  const auto& m = *in.teacher;
  const double b = frozen_bytes(cfg.distill.dtype, cfg), width = pass_width(m), V = static_cast<double>(m.vocab_size);
  return {{"teacher layer forward", micro_tokens * width * b, num(micro_tokens) + " tokens x " + num(width) +
           " (2H + q/k/v + attention out + 3 x intermediate) x " + num(b) + " B"},
          {"teacher head", head_tokens * V * (b + 8), head_what + " x vocab " + num(V) + " x (" + num(b) +
           " + 8) B (logits, float32 copy and log-softmax)"}};
}

}  // namespace gspo::plan
