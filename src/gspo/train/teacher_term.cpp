#include "gspo/train/teacher_term.h"

#include <torch/torch.h>

#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "gspo/algo/distill.h"
#include "gspo/core/clock.h"
#include "gspo/rollout/sampling.h"
#include "gspo/train/metrics/metrics.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/setup/teacher.h"
#include "gspo/train/sources/rollout_source.h"

namespace gspo::train {

TeacherTerm::TeacherTerm(const config::Config& cfg, model::Policy& teacher, bool nan_fault,
                         const TeacherPrompts* prompts)
    : opts_(cfg.distill),
      teacher_(teacher),
      temperature_(rollout::logprob_temperature(cfg.rollout.temperature)),
      chunk_(cfg.train.logprob_chunk_tokens),
      context_(teacher_.manifest().max_seq_len),
      nan_fault_(nan_fault),
      prompts_(prompts) {
  const auto& tr = cfg.train;
  pass_ = {tr.chunked_head || tr.activation_checkpointing, false, tr.chunked_head};  // (no expert parallelism)
}

// The rows of mask that fit the teacher's context: undefined when all do (known from the width on the host, no read),
// else their indices (one read), the others counted in `long_rows`.
at::Tensor TeacherTerm::fitting_rows(const at::Tensor& mask, const KnownShape& shape, int64_t* long_rows) const {
  if (long_rows) *long_rows = 0;
  const int64_t widest = shape.width > 0 ? shape.width : mask.sum(1).max().item<int64_t>();
  if (context_ <= 0 || widest <= context_) return {};
  const auto fit = torch::nonzero(mask.sum(1) <= context_).squeeze(1);
  if (long_rows) *long_rows = mask.size(0) - fit.numel();
  return fit;
}

void TeacherTerm::begin_step(const Scored& s) {
  row_prompts_.clear();
  row_response_.clear();
  if (!prompts_) return;
  const auto t0 = core::Clock::now();
  const auto& b = s.batch;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> made;  // (a group's rows share one)
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const int64_t ex = r < static_cast<int64_t>(s.examples.size()) ? s.examples[static_cast<size_t>(r)] : -1;
    if (ex < 0)
      throw std::logic_error("distill.chat_template: row " + std::to_string(r) + " of the step's batch names no "
                             "example to render for the teacher");
    auto& ids = made[ex];
    if (!ids) ids = std::make_shared<const std::vector<int64_t>>(prompts_->ids(ex));
    row_prompts_.push_back(ids);
    row_response_.push_back(b.response_lengths[static_cast<size_t>(r)]);
  }
  seconds_ += core::seconds_since(t0);
}

TeacherTerm::Input TeacherTerm::input(const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                                      const std::vector<int64_t>& rows, const KnownShape& shape) const {
  if (!prompts_) return {ids, mask, P, shape};
  const int64_t n = ids.size(0), R = ids.size(1) - P;
  if (static_cast<int64_t>(rows.size()) != n)
    throw std::logic_error("TeacherTerm: " + std::to_string(n) + " rows given with " + std::to_string(rows.size()) +
                           " batch rows (begin_step first)");
  int64_t Q = 1, width = 1;
  for (int64_t r : rows) {
    const auto q = static_cast<int64_t>(row_prompts_.at(static_cast<size_t>(r))->size());
    Q = std::max(Q, q);
    width = std::max(width, q + row_response_.at(static_cast<size_t>(r)));
  }
  // The prompts left-padded into Q columns on the host, then beside the response columns on the device.
  auto p_ids = torch::full({n, Q}, teacher_.manifest().pad_token_id, torch::kLong);
  auto p_mask = torch::zeros({n, Q}, torch::kLong);
  auto pi = p_ids.accessor<int64_t, 2>();
  auto pm = p_mask.accessor<int64_t, 2>();
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = *row_prompts_[static_cast<size_t>(rows[static_cast<size_t>(i)])];
    const int64_t q = static_cast<int64_t>(p.size());
    for (int64_t j = 0; j < q; ++j) pi[i][Q - q + j] = p[static_cast<size_t>(j)], pm[i][Q - q + j] = 1;
  }
  Input in;
  in.ids = torch::cat({p_ids.to(ids.device()), ids.narrow(1, P, R)}, 1);
  in.mask = torch::cat({p_mask.to(mask.device(), mask.scalar_type()), mask.narrow(1, P, R)}, 1);
  in.prompt_len = Q;
  in.shape.width = width;
  in.shape.real_index = shape.real_index;  // (response columns as they were)
  return in;
}

at::Tensor TeacherTerm::logprobs(const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                                 const std::vector<int64_t>& rows, const KnownShape& shape, int64_t* long_rows) {
  torch::NoGradGuard g;
  const auto in = input(ids, mask, P, rows, shape);
  const auto fit = fitting_rows(in.mask, in.shape, long_rows);
  if (!fit.defined())
    return response_logprobs(teacher_, in.ids, in.mask, in.prompt_len, temperature_, Entropy::kSkip, chunk_, pass_,
                             {}, in.shape).logprobs;
  auto lp = torch::full({ids.size(0), ids.size(1) - P}, std::numeric_limits<float>::quiet_NaN(),
                        ids.options().dtype(torch::kFloat));
  if (fit.numel() > 0)  // (the rows that fit, as a batch of their own: its width is theirs)
    lp.index_copy_(0, fit, response_logprobs(teacher_, in.ids.index_select(0, fit), in.mask.index_select(0, fit),
                                             in.prompt_len, temperature_, Entropy::kSkip, chunk_, pass_).logprobs);
  return lp;
}

TopkLogprobs TeacherTerm::topk(const Input& in, int64_t* long_rows) {
  const auto& ids = in.ids;
  const auto& mask = in.mask;
  const int64_t P = in.prompt_len;
  const auto fit = fitting_rows(mask, in.shape, long_rows);
  if (!fit.defined()) return response_topk(teacher_, ids, mask, P, temperature_, opts_.top_k, chunk_, pass_, in.shape);
  const int64_t n = ids.size(0), R = ids.size(1) - P, k = std::min(opts_.top_k, teacher_.manifest().vocab_size);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto f = ids.options().dtype(torch::kFloat);
  TopkLogprobs out{torch::full({n, R}, nan, f), torch::full({n, R, k}, nan, f), torch::zeros({n, R, k}, ids.options())};
  if (fit.numel() == 0) return out;
  auto part = response_topk(teacher_, ids.index_select(0, fit), mask.index_select(0, fit), P, temperature_,
                            opts_.top_k, chunk_, pass_);
  out.logprobs.index_copy_(0, fit, part.logprobs);
  out.top_lp = out.top_lp.narrow(2, 0, part.top_lp.size(2)).index_copy(0, fit, part.top_lp);
  out.top_ids = out.top_ids.narrow(2, 0, part.top_ids.size(2)).index_copy(0, fit, part.top_ids);
  return out;
}

void TeacherTerm::apply(Micro& mi, int64_t P) {
  torch::NoGradGuard g;
  const auto t0 = core::Clock::now();
  if (opts_.objective == config::DistillObjective::kReverseKl)
    apply_sampled(mi, P);
  else
    apply_topk(mi, P);
  if (!prompts_) {
    teacher_tokens_ += mi.real_tokens;
  } else {
    for (int64_t r : mi.rows)
      teacher_tokens_ += static_cast<int64_t>(row_prompts_.at(static_cast<size_t>(r))->size()) +
                         row_response_.at(static_cast<size_t>(r));
  }
  seconds_ += core::seconds_since(t0);
}

// reverse_kl: the per-token advantages (algo::distill_advantages).
void TeacherTerm::apply_sampled(Micro& mi, int64_t P) {
  int64_t long_rows = 0;
  auto t_lp = logprobs(mi.ids, mi.mask, P, mi.rows, mi.shape, &long_rows);
  if (nan_fault_) t_lp[0].fill_(std::numeric_limits<float>::quiet_NaN());
  auto terms = algo::distill_advantages(mi.advantages, t_lp, mi.old_lp, mi.loss_mask, opts_);
  mi.advantages = terms.advantages;
  kl_sum_ += terms.kl_sum;
  tokens_ += terms.tokens;
  teacher_abs_ += terms.teacher_abs;
  reward_abs_ += terms.reward_abs;
  long_rows_ += long_rows;
  failed_rows_ += terms.failed_rows - long_rows;
}

// forward_kl / jsd: the teacher's top-k kept with the rows; a row whose teacher log-probs are not finite on a trained
// token is left out of the divergence (teacher_mask 0) and keeps reward_weight x A_i.
void TeacherTerm::apply_topk(Micro& mi, int64_t P) {
  int64_t long_rows = 0;
  auto t = topk(input(mi.ids, mi.mask, P, mi.rows, mi.shape), &long_rows);
  if (nan_fault_) t.logprobs[0].fill_(std::numeric_limits<float>::quiet_NaN());
  const auto m = mi.loss_mask.to(torch::kFloat);
  const auto finite = torch::isfinite(t.logprobs).logical_and(torch::isfinite(t.top_lp).all(-1));
  const auto bad_row = torch::logical_not(finite).logical_and(m > 0).any(1);
  const auto ok = torch::logical_not(bad_row).unsqueeze(1).to(torch::kFloat) * m;
  mi.teacher_ids = t.top_ids;
  mi.teacher_lp = torch::nan_to_num(t.top_lp, 0, 0, 0);
  mi.teacher_mask = ok;
  mi.advantages = opts_.reward_weight * mi.advantages;
  const auto kl = torch::where(ok > 0, mi.old_lp - t.logprobs, torch::zeros_like(ok));
  const auto stats = torch::stack({kl.sum(), ok.sum(), (mi.advantages.abs() * torch::logical_not(bad_row)).sum(),
                                   bad_row.sum().to(torch::kFloat)})
                         .to(torch::kDouble)
                         .cpu();
  const auto s = stats.accessor<double, 1>();
  kl_sum_ += s[0];
  tokens_ += s[1];
  reward_abs_ += s[2];  // (per sequence: the divergence is a sequence's token mean)
  long_rows_ += long_rows;
  failed_rows_ += static_cast<int64_t>(s[3]) - long_rows;
}

at::Tensor TeacherTerm::loss_term(const at::Tensor& student_topk, const Micro& mi) const {
  return opts_.coef * algo::topk_divergence(student_topk, mi.teacher_lp, mi.teacher_mask, opts_.objective,
                                            opts_.jsd_beta);
}

void TeacherTerm::add_divergence(double sum, double sequences) {
  divergence_sum_ += sum;
  divergence_sequences_ += sequences;
}

void TeacherTerm::take(StepMetrics& m) {
  m.distill_kl = {kl_sum_, tokens_};
  if (opts_.objective == config::DistillObjective::kReverseKl) {
    m.distill_share = {teacher_abs_, teacher_abs_ + reward_abs_};
  } else {  // per sequence: coef x its divergence against reward_weight x |A_i|
    m.distill_share = {divergence_sum_, divergence_sum_ + reward_abs_};
    m.distill_divergence = {divergence_sum_ / opts_.coef, divergence_sequences_};
  }
  m.distill_failed_rows = failed_rows_;
  m.distill_long_rows = long_rows_;
  m.teacher_tokens = teacher_tokens_;
  m.time_teacher_s = seconds_;
  kl_sum_ = tokens_ = teacher_abs_ = reward_abs_ = seconds_ = divergence_sum_ = divergence_sequences_ = 0;
  failed_rows_ = long_rows_ = teacher_tokens_ = 0;
}

}  // namespace gspo::train
