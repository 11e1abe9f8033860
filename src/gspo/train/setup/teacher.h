// On-policy distillation's teacher (distill.teacher): a policy export loaded frozen on the training device in
// distill.dtype, checked to share the student's vocabulary. Its per-token log-probs enter the advantage in the step
// (algo/distill.h, train/teacher_term.h).
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/chat_message.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::train {

struct LoadedTeacher {
  model::Policy policy;
  std::unique_ptr<tokenizer::Tokenizer> tok;  // its own
  // How it reads a prompt (distill.chat_template other than student): the run's data options in its format, with
  // its own Jinja template for auto.
  config::DataOptions format;
};

// ConfigError naming distill.teacher when the teacher's logits are narrower than the student's, or when its
// tokenizer writes another token than the student's for an id the student can sample (the first such id named, with
// both tokens); naming distill.chat_template for auto and a teacher that carries no template; what io::load_model
// throws for a file that is not a policy export.
LoadedTeacher load_teacher(const config::Config& cfg, c10::Device device, const tokenizer::Tokenizer& student_tok,
                           const model::Policy& student);

// distill.chat_template other than student: each training example's prompt as the teacher reads it, rendered by
// data::format_prompt in the teacher's format (data.system_prompt, prompt_template and enable_thinking, and the tools
// the policy's prompts list) and encoded by the teacher's tokenizer. Rendered when asked (a run's examples may be
// many: nothing is kept).
class TeacherPrompts {
 public:
  TeacherPrompts(config::DataOptions format, std::unique_ptr<tokenizer::Tokenizer> tok,
                 const std::vector<data::Example>& examples, std::vector<tokenizer::ChatTool> tools);
  // Example `index`'s prompt as text and as the teacher's ids. std::out_of_range for an index not among them.
  std::string text(int64_t index) const;
  std::vector<int64_t> ids(int64_t index) const;
  int64_t examples() const { return static_cast<int64_t>(examples_.size()); }

 private:
  config::DataOptions format_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  const std::vector<data::Example>& examples_;
  std::vector<tokenizer::ChatTool> tools_;
};

// The first id below `ids` whose token differs between `a` and `b` (bytes with special tokens written), or -1.
int64_t first_token_difference(const tokenizer::Tokenizer& a, const tokenizer::Tokenizer& b, int64_t ids);

}  // namespace gspo::train
