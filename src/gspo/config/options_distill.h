// The distill section of options.h: on-policy distillation from a teacher (docs/algorithm.md "On-policy
// distillation"). Kept apart only for length; options.h includes this file and the Config there holds it.
#pragma once
#include <cstdint>
#include <string>

#include "gspo/config/choices.h"
#include "gspo/config/rule.h"

namespace gspo::config {

// A frozen teacher scores every token the student sampled. reverse_kl: the per-token advantage is
// reward_weight * A_i (the group-normalised sequence reward) + coef * clip(log pi_teacher(y_t) - log pi_old(y_t)),
// optimised with the token-level clipped loss (algorithm.loss gspo_token or grpo). forward_kl / jsd: the policy loss
// takes reward_weight * A_i, and coef x the divergence over the teacher's top-k at each sampled position is added.
struct DistillOptions {
  std::string teacher = "";
  DistillObjective objective = DistillObjective::kReverseKl;
  int64_t top_k = 32;
  double jsd_beta = 0.5;
  double coef = 1.0;
  double reward_weight = 0.0;
  double clip = 0.0;
  ScoreDtype dtype = ScoreDtype::kAuto;
  TeacherChat chat_template = TeacherChat::kStudent;

  template <class V>
  void visit(V&& v) {
    v("teacher", teacher, "a policy export (gspo_model.py or export_hf.py), a checkpoint or a run directory (its "
      "newest checkpoint) whose per-token log-probs teach the policy on its own samples (on-policy distillation, "
      "reverse KL; docs/distillation.md); it shares the policy's vocabulary, is frozen on the training device and "
      "scores each update's rows in one pass per micro-batch; \"\" = off", any());
    v("objective", objective, "reverse_kl: on the sampled tokens, advantage log pi_teacher - log pi_old per token (the "
      "on-policy reverse KL; needs algorithm.loss gspo_token or grpo); forward_kl: KL(teacher || student) over the "
      "teacher's top_k tokens at each sampled position (the teacher renormalised over them), a loss term beside the "
      "policy loss; jsd: the generalised Jensen-Shannon divergence over them with jsd_beta (GKD), both renormalised",
      choice_rule(objective));
    v("top_k", top_k, "forward_kl and jsd: the teacher's most likely tokens at each position the divergence runs over "
      "(the whole vocabulary when at least its size: the exact divergence)", at_least(1));
    v("jsd_beta", jsd_beta, "jsd: the mixture M = beta x teacher + (1 - beta) x student and the divergence "
      "beta KL(teacher || M) + (1 - beta) KL(student || M) (TRL GKD's beta)", strictly_between(0, 1));
    v("coef", coef, "weight of the teacher's term: of log pi_teacher - log pi_old in the advantage (reverse_kl), or "
      "of the divergence added to the loss (forward_kl, jsd)", greater_than(0));
    v("reward_weight", reward_weight, "weight of the group-normalised sequence reward beside it (0 = distillation "
      "alone: the reward is still computed and logged)", at_least(0));
    v("clip", clip, "reverse_kl: clip of the per-token teacher term to [-clip, clip] before coef (0 = none)",
      at_least(0));
    v("dtype", dtype, "the teacher's compute dtype: auto (bfloat16 on CUDA, float32 on the CPU), float32 or "
      "bfloat16", choice_rule(dtype));
    v("chat_template", chat_template, "how the teacher reads the prompt: student (the prompt tokens the policy read, "
      "as sampled), or the conversation rendered again in the teacher's format: auto (the teacher export's own Jinja "
      "chat template, as data.chat_template auto renders the policy's), none, chatml, qwen2.5, deepseek_r1; with "
      "data.system_prompt, prompt_template and the tools list as the policy's prompt has them. The response is "
      "scored as the policy wrote it (per-token terms compare the same tokens; a tool episode's observation turns "
      "stay in the policy's format)", choice_rule(chat_template));
  }
};

}  // namespace gspo::config
