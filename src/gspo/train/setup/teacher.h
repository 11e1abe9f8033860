// On-policy distillation's teacher (distill.teacher): a policy export loaded frozen on the training device in
// distill.dtype, checked to share the student's vocabulary. Its per-token log-probs enter the advantage in the step
// (algo/distill.h, train/teacher_term.h).
#pragma once
#include <c10/core/Device.h>

#include "gspo/config/options.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::train {

// ConfigError naming distill.teacher when the teacher's logits are narrower than the student's, or when its
// tokenizer writes another token than the student's for an id the student can sample (the first such id named, with
// both tokens); what io::load_model throws for a file that is not a policy export.
model::Policy load_teacher(const config::Config& cfg, c10::Device device, const tokenizer::Tokenizer& student_tok,
                           const model::Policy& student);

// The first id below `ids` whose token differs between `a` and `b` (bytes with special tokens written), or -1.
int64_t first_token_difference(const tokenizer::Tokenizer& a, const tokenizer::Tokenizer& b, int64_t ids);

}  // namespace gspo::train
