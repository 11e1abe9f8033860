// The distill section of options.h: on-policy distillation from a teacher (docs/algorithm.md "On-policy
// distillation"). Kept apart only for length; options.h includes this file and the Config there holds it.
#pragma once
#include <string>

#include "gspo/config/choices.h"
#include "gspo/config/rule.h"

namespace gspo::config {

// A frozen teacher scores every token the student sampled; the per-token advantage is
// reward_weight * A_i (the group-normalised sequence reward) + coef * clip(log pi_teacher(y_t) - log pi_old(y_t)),
// optimised with the token-level clipped loss (algorithm.loss gspo_token or grpo).
struct DistillOptions {
  std::string teacher = "";
  double coef = 1.0;
  double reward_weight = 0.0;
  double clip = 0.0;
  ScoreDtype dtype = ScoreDtype::kAuto;

  template <class V>
  void visit(V&& v) {
    v("teacher", teacher, "a policy export (gspo_model.py or export_hf.py), a checkpoint or a run directory (its "
      "newest checkpoint) whose per-token log-probs teach the policy on its own samples (on-policy distillation, "
      "reverse KL; docs/distillation.md); it shares the policy's vocabulary, is frozen on the training device and "
      "scores each update's rows in one pass per micro-batch; \"\" = off", any());
    v("coef", coef, "weight of the per-token teacher term log pi_teacher - log pi_old in the advantage",
      greater_than(0));
    v("reward_weight", reward_weight, "weight of the group-normalised sequence reward beside it (0 = distillation "
      "alone: the reward is still computed and logged)", at_least(0));
    v("clip", clip, "clip of the per-token teacher term to [-clip, clip] before coef (0 = none)", at_least(0));
    v("dtype", dtype, "the teacher's compute dtype: auto (bfloat16 on CUDA, float32 on the CPU), float32 or "
      "bfloat16", choice_rule(dtype));
  }
};

}  // namespace gspo::config
