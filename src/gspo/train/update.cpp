// The mini-batch updates of a rollout step: per mini-batch, forward/backward over this rank's micro-batches with loss
// weights relative to the global mini-batch, then one UpdateEngine step. Non-finite losses or gradients are agreed
// on by every rank, so all of them skip (or stop) together.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "gspo/core/error.h"
#include "gspo/parallel/comm.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/schedule.h"
#include "gspo/train/step.h"
#include "gspo/train/teacher_term.h"
#include "gspo/train/engines/update_engine.h"

namespace gspo::train {
namespace {

// What the step's updates add up to; a skipped mini-batch's share is taken back out (see Totals::checkpoint).
struct Totals {
  algo::LossStats loss;     // of the applied mini-batches
  double loss_sum = 0;      // sum over sequences of the per-sequence loss
  double entropy_sum = 0;   // over response tokens
  double train_tokens = 0;  // prompt + response tokens through forward and backward (skipped ones too: work done)
  double slots = 0;         // rows x columns of those micro-batches (train_tokens plus padding)
  double grad_norm_sum = 0, grad_norm_max = 0, lr = 0, first_mb_ratio_dev = 0;
  int64_t updates = 0, skipped = 0;
  int64_t host_reads = 0, micros = 0;  // device-to-host reads of the micro-batches' passes, and those passes
};

// top_entropy_quantile: the response tokens whose entropy is at least the (1 - q) quantile of the micro-batch's.
at::Tensor high_entropy_tokens(const at::Tensor& entropy, const at::Tensor& loss_mask, double q) {
  const auto valid = loss_mask > 0;
  auto values = entropy.masked_select(valid);
  if (values.numel() == 0) return valid;
  const double threshold = torch::quantile(values.to(torch::kDouble), 1.0 - q).item<double>();
  return valid & (entropy >= threshold);
}

// Lockstep engines (ZeRO-3): the backward of an idle micro-batch, or of one after a non-finite loss, still runs on this
// rank, so the others' gathers and reduce-scatters find it; its gradients are discarded.
void keep_in_step(UpdateEngine& engine, const TokenLogprobs& tl) {
  struct Idle {  // the engine idles for this backward only, however the scope is left
    UpdateEngine& engine;
    explicit Idle(UpdateEngine& e) : engine(e) { engine.set_idle(true); }
    ~Idle() { engine.set_idle(false); }
  } idle(engine);
  (tl.logprobs.sum() * 0.0).backward();
  engine.after_backward();
}

// The update's figures of the step's metrics.
void record_update(const Totals& t, StepMetrics& m) {
  const auto& L = t.loss;
  m.seq_ratio = {L.seq_ratio_sum, L.sequences};
  m.seq_ratio_min = L.sequences > 0 ? L.seq_ratio_min : kNoValue;
  m.seq_ratio_max = L.sequences > 0 ? L.seq_ratio_max : -kNoValue;
  m.first_minibatch_ratio_dev = t.first_mb_ratio_dev;
  m.clip_seq_low = {L.seq_clipped_low, L.sequences};
  m.clip_seq_high = {L.seq_clipped_high, L.sequences};
  m.clip_seq = {L.seq_clipped_low + L.seq_clipped_high, L.sequences};
  m.clip_tok_low = {L.tok_clipped_low, L.tokens};
  m.clip_tok_high = {L.tok_clipped_high, L.tokens};
  m.clip_tok = {L.tok_clipped_low + L.tok_clipped_high, L.tokens};
  m.loss = {t.loss_sum, L.sequences};
  m.kl = {L.kl_sum, L.sequences};
  m.kl_seq = {L.kl_seq_sum, L.sequences};
  m.entropy = {t.entropy_sum, L.response_tokens};
  m.policy_tokens = {L.tokens, L.response_tokens};
  m.grad_norm = t.updates > 0 ? t.grad_norm_sum / static_cast<double>(t.updates) : 0.0;
  m.grad_norm_max = t.grad_norm_max;
  m.lr = t.lr;
  m.skipped_updates = t.skipped;
  m.train_tokens_per_s.amount = t.train_tokens;
  m.pad_frac = {t.slots - t.train_tokens, t.slots};
  m.train_host_reads = t.micros > 0 ? static_cast<double>(t.host_reads) / static_cast<double>(t.micros) : 0.0;
}

[[noreturn]] void nonfinite(int64_t step, size_t mb, const std::string& what) {
  throw TrainingError("step " + std::to_string(step + 1) + ", mini-batch " + std::to_string(mb + 1) + ": non-finite " +
                      what + "; stopped before applying it (nothing was saved from this step; the last checkpoint "
                      "is intact). Lower optimizer.lr, or set train.on_nonfinite: skip to drop such updates");
}

}  // namespace

void StepRunner::update(std::vector<MiniBatch>& plan, int64_t P, Progress& progress, StepMetrics& m) {
  const auto& c = p_.cfg;
  Totals t;
  for (size_t k = 0; k < plan.size(); ++k) {
    p_.engine.zero_grad();
    const double loss_before = t.loss_sum, entropy_before = t.entropy_sum;
    algo::LossStats mb_stats;
    double mb_divergence = 0;  // forward_kl / jsd: coef x divergence summed over the mini-batch's sequences
    std::optional<std::string> bad;
    for (auto& mi : plan[k].micros) {
      auto tl = response_logprobs(p_.policy, mi.ids, mi.mask, P, temperature_, Entropy::kCompute,
                                  c.train.logprob_chunk_tokens, train_pass_,
                                  {replayed(mi), nullptr}, mi.shape, mi.teacher_ids);
      if (mi.idle || bad) {  // reached with `bad` set by lockstep engines only
        keep_in_step(p_.engine, tl);
        continue;
      }
      algo::LossInputs in{tl.logprobs, mi.old_lp, mi.loss_mask, mi.advantages, mi.ref_lp, mi.is, {}, {}};
      ++t.micros;
      t.host_reads += tl.host_reads;
      if (c.algorithm.top_entropy_quantile < 1) {
        in.keep = high_entropy_tokens(tl.entropy, mi.loss_mask, c.algorithm.top_entropy_quantile);
        t.host_reads += 2;  // the token count of masked_select, the quantile
      }
      // distill.objective forward_kl / jsd: coef x each sequence's divergence to the teacher's top-k (teacher_term.h)
      const auto teach = mi.teacher_ids.defined() ? p_.teacher->loss_term(tl.extra, mi) : at::Tensor();
      in.extra = (tl.entropy * mi.loss_mask).sum().reshape({1});  // comes back with the loss statistics
      if (teach.defined()) in.extra = torch::cat({in.extra, teach.detach().sum().reshape({1})});
      auto res = algo::policy_loss(in, loss_opts_);
      ++t.host_reads;
      const double rows = static_cast<double>(mi.rows.size());
      const double lv = res.loss_value + (teach.defined() ? res.extra.at(1) / rows : 0.0);
      if (teach.defined()) res.loss = res.loss + teach.mean();
      if (!std::isfinite(lv)) {
        bad = "loss (" + std::to_string(lv) + ")";
        if (!p_.engine.lockstep()) break;
        keep_in_step(p_.engine, tl);
        continue;
      }
      (res.loss * (rows / static_cast<double>(plan[k].global_rows))).backward();
      p_.engine.after_backward();
      mb_stats.add(res.stats);
      t.loss_sum += lv * rows;
      t.entropy_sum += res.extra.at(0);
      if (teach.defined()) mb_divergence += res.extra.at(1);
      t.train_tokens += static_cast<double>(mi.real_tokens);
      t.slots += static_cast<double>(mi.ids.numel());
    }
    if (p_.comm.any(bad.has_value()) && !bad) bad = "loss on another rank";
    double gnorm = 0;
    if (!bad) {
      gnorm = p_.engine.reduce();
      if (!std::isfinite(gnorm)) bad = "gradient norm (" + std::to_string(gnorm) + ")";
    }
    if (bad) {
      if (c.train.on_nonfinite == config::OnNonfinite::kStop) nonfinite(progress.step, k, *bad);
      p_.engine.zero_grad();
      t.loss_sum = loss_before;  // the loss and entropy figures describe the applied updates only
      t.entropy_sum = entropy_before;
      ++t.skipped;
      continue;
    }
    if (k == 0 && mb_stats.sequences > 0)
      t.first_mb_ratio_dev = std::max(std::abs(mb_stats.seq_ratio_max - 1), std::abs(1 - mb_stats.seq_ratio_min));
    t.loss.add(mb_stats);
    const auto& o = c.optimizer;
    t.lr = learning_rate(progress.optimizer_steps, total_optimizer_steps_, o.lr, o.warmup_steps, o.schedule,
                         o.min_lr_ratio);
    p_.engine.step(t.lr);
    if (p_.teacher) p_.teacher->add_divergence(mb_divergence, mb_stats.sequences);
    ++progress.optimizer_steps;
    ++t.updates;
    t.grad_norm_sum += gnorm;
    t.grad_norm_max = std::max(t.grad_norm_max, gnorm);
  }

  record_update(t, m);
}

}  // namespace gspo::train
