// A model reward's memory in gspo plan (declared in plan/memory.h): its frozen weights on every rank that scores, and
// one scoring pass's working set.
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

// One scoring pass (reward.model_batch_tokens tokens): a layer's working set at once, the residual stream and its
// normed copy, q/k/v and the attention output, the SwiGLU's gate, up and product; freed layer by layer, and before
// the step's log-prob pass.
Term reward_pass_term(const ModelShape& rm, const config::Config& cfg) {
  const double b = reward_bytes(cfg), t = static_cast<double>(cfg.reward.model_batch_tokens);
  const double qkv = static_cast<double>((rm.num_heads + 2 * rm.num_kv_heads) * rm.head_dim);
  const double width = 2.0 * rm.hidden_size + qkv + static_cast<double>(rm.num_heads * rm.head_dim) +
                       3.0 * std::max(rm.intermediate_size, rm.moe_intermediate_size);
  return {"reward model scoring pass", t * width * b, num(t) + " tokens (reward.model_batch_tokens) x " + num(width) +
          " (2H + q/k/v + attention out + 3 x intermediate) x " + num(b) + " B"};
}

}  // namespace gspo::plan
