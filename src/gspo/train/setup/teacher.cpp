#include "gspo/train/setup/teacher.h"

#include <torch/torch.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/io/model_load.h"
#include "gspo/io/model_ref.h"
#include "gspo/reward/scorers/model_scoring.h"

namespace gspo::train {

int64_t first_token_difference(const tokenizer::Tokenizer& a, const tokenizer::Tokenizer& b, int64_t ids) {
  for (int64_t id = 0; id < ids; ++id)
    if (id >= a.vocab_size() || id >= b.vocab_size() || a.token_bytes(id, true) != b.token_bytes(id, true)) return id;
  return -1;
}

namespace {

// One token's log-prob through the teacher on `device`: an export whose code pins another device, or that is no
// causal LM, fails here, at start-up, naming the file.
void probe(model::Policy& teacher, const std::string& file, c10::Device device) {
  torch::NoGradGuard g;
  const auto ids = torch::zeros({1, 2}, torch::TensorOptions().dtype(torch::kLong).device(device));
  at::Tensor lp;
  try {
    lp = torch::log_softmax(teacher.logits_from(ids, torch::ones_like(ids), 1).to(torch::kFloat), -1);
  } catch (const c10::Error& e) {
    throw ConfigError("distill.teacher: '" + file + "' could not score a token on " + device.str() + ": " +
                      e.what_without_backtrace());
  }
  if (lp.device() != device || !torch::isfinite(lp).all().item<bool>())
    throw ConfigError("distill.teacher: '" + file + "' gave " + (lp.device() != device ? "log-probs on " +
                      lp.device().str() + ", not on the training device " + device.str() : std::string(
                      "a non-finite log-prob for a token")) + " in a probe at start-up");
}

// distill.chat_template's format for the teacher: the run's data options (system prompt, prompt template, thinking)
// rendered with the teacher's template instead of the policy's.
config::DataOptions teacher_format(const config::Config& cfg, const io::LoadedModel& m) {
  auto f = cfg.data;
  const auto chat = cfg.distill.chat_template;
  switch (chat) {
    case config::TeacherChat::kStudent: return f;
    case config::TeacherChat::kNone: f.chat_template = config::ChatTemplate::kNone; return f;
    case config::TeacherChat::kChatml: f.chat_template = config::ChatTemplate::kChatml; return f;
    case config::TeacherChat::kQwen25: f.chat_template = config::ChatTemplate::kQwen25; return f;
    case config::TeacherChat::kDeepseekR1: f.chat_template = config::ChatTemplate::kDeepseekR1; return f;
    case config::TeacherChat::kAuto: break;
  }
  if (m.chat_template.empty())
    throw ConfigError(config::set_at(cfg, "distill.chat_template") + "distill.chat_template auto: the teacher '" +
                      cfg.distill.teacher + "' carries no chat template (chat_template.jinja, or tokenizer_config.json's "
                      "chat_template, which scripts/export_hf.py keeps from the model directory); set chatml, qwen2.5, "
                      "deepseek_r1 or none, or student to give it the policy's prompt tokens");
  f.chat_template = config::ChatTemplate::kAuto;
  f.chat_template_source = m.chat_template;
  f.chat_template_origin = m.chat_template_origin;
  const auto token = [&](int64_t id) { return id >= 0 && m.tok ? m.tok->decode({id}, true) : std::string(); };
  f.chat_bos_token = token(m.tok ? m.tok->bos_id() : -1);
  f.chat_eos_token = token(m.policy->manifest().eos_token_id);
  return f;
}

}  // namespace

TeacherPrompts::TeacherPrompts(config::DataOptions format, std::unique_ptr<tokenizer::Tokenizer> tok,
                               const std::vector<data::Example>& examples, std::vector<tokenizer::ChatTool> tools)
    : format_(std::move(format)), tok_(std::move(tok)), examples_(examples), tools_(std::move(tools)) {}

std::string TeacherPrompts::text(int64_t index) const {
  if (index < 0 || index >= examples())
    throw std::out_of_range("distill.chat_template: a row names example " + std::to_string(index) + " of " +
                            std::to_string(examples()));
  return data::format_prompt(format_, examples_[static_cast<size_t>(index)], tools_);
}

std::vector<int64_t> TeacherPrompts::ids(int64_t index) const { return tok_->encode_prompt(text(index)); }

LoadedTeacher load_teacher(const config::Config& cfg, c10::Device device, const tokenizer::Tokenizer& student_tok,
                           const model::Policy& student) {
  const auto& d = cfg.distill;
  const auto ref = io::resolve_model_ref(d.teacher);  // a model file, a checkpoint or a run (its newest checkpoint)
  io::ModelLoad what;
  what.file = ref.model;
  what.merge = ref.adapter;
  what.device = device;
  what.frozen = true;
  what.dtype = reward::score_dtype(d.dtype, device);
  what.check_contract = false;
  auto loaded = io::load_model(what);
  const auto& tm = loaded.policy->manifest();
  const int64_t student_vocab = student.manifest().vocab_size;
  if (tm.vocab_size < student_vocab)
    throw ConfigError("distill.teacher: '" + d.teacher + "' scores " + std::to_string(tm.vocab_size) +
                      " token ids, fewer than the " + std::to_string(student_vocab) + " the policy '" +
                      cfg.model.path + "' can sample: teacher and policy must share a vocabulary");
  // The ids the student can sample that its tokenizer knows (an embedding may be padded past the tokenizer).
  const int64_t ids = std::min(student_vocab, student_tok.vocab_size());
  if (const int64_t id = first_token_difference(student_tok, *loaded.tok, ids); id >= 0) {
    const auto show = [](const tokenizer::Tokenizer& t, int64_t i) {
      if (i >= t.vocab_size()) return std::string("(no such id: its tokenizer has ") + std::to_string(t.vocab_size()) +
                                      ")";
      return nlohmann::json(t.token_bytes(i, true)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    throw ConfigError("distill.teacher: '" + d.teacher + "' has another vocabulary than the policy '" +
                      cfg.model.path + "': token id " + std::to_string(id) + " is " +
                      show(*loaded.tok, id) + " for the teacher and " +
                      show(student_tok, id) + " for the policy (per-token log-probs compare the "
                      "same ids, so both must use one tokenizer)");
  }
  if (student_tok.vocab_size() != loaded.tok->vocab_size())
    log::info("distill.teacher: its tokenizer has {} ids, the policy's {}: the {} the policy can sample agree",
              loaded.tok->vocab_size(), student_tok.vocab_size(), ids);
  auto format = teacher_format(cfg, loaded);
  probe(*loaded.policy, d.teacher, device);
  log::info("distillation teacher {}: {} ({} parameters, {} layers) on {} in {}; advantage = {} x A_i + {} x "
            "(log pi_teacher - log pi_old){}", d.teacher, tm.architecture, loaded.policy->num_parameters(),
            tm.num_layers, device.str(), c10::toString(*what.dtype), d.reward_weight, d.coef,
            d.clip > 0 ? " clipped to +-" + std::to_string(d.clip) : std::string());
  if (d.chat_template == config::TeacherChat::kAuto)
    log::info("distillation teacher reads prompts in its own chat template, from {} (distill.chat_template auto)",
              format.chat_template_origin);
  else if (d.chat_template != config::TeacherChat::kStudent)
    log::info("distillation teacher reads prompts in {} (distill.chat_template)", config::name_of(d.chat_template));
  return {std::move(*loaded.policy), std::move(loaded.tok), std::move(format)};
}

}  // namespace gspo::train
