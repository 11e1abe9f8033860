#include "gspo/algo/mismatch.h"

#include <torch/torch.h>

#include <cmath>

namespace gspo::algo {
namespace {

// log w at the configured level: [N, T] (0 on padding) or [N].
at::Tensor log_weights(const at::Tensor& train_lp, const at::Tensor& sampler_lp, const at::Tensor& mask, IsLevel level) {
  const auto valid = mask > 0;
  auto lw = torch::where(valid, train_lp - sampler_lp, torch::zeros_like(train_lp));
  if (level == IsLevel::kToken) return lw;
  if (level == IsLevel::kSequenceGeometric) return lw.sum(1) / mask.sum(1);
  return lw.sum(1);
}

}  // namespace

IsWeights importance_weights(const at::Tensor& train_lp, const at::Tensor& sampler_lp, const at::Tensor& mask,
                             const IsOptions& o) {
  IsWeights out;
  if (o.mode == IsCorrection::kNone) return out;
  torch::NoGradGuard g;
  const auto lw = log_weights(train_lp.detach(), sampler_lp.detach(), mask, o.level);
  const auto valid = o.level == IsLevel::kToken ? mask > 0 : torch::ones(lw.sizes(), lw.options().dtype(torch::kBool));
  const double log_cap = std::log(o.cap);
  if (o.mode == IsCorrection::kTis) {
    out.keep = valid;
    out.weight = torch::where(valid, torch::exp(lw.clamp_max(log_cap)), torch::zeros_like(lw));
  } else {
    out.keep = valid & (lw >= std::log(o.floor)) & (lw <= log_cap);
    out.weight = torch::where(out.keep, torch::exp(lw.clamp_max(log_cap)), torch::zeros_like(lw));
  }
  return out;
}

void MismatchStats::add(const MismatchStats& o) {
  tokens += o.tokens;
  sequences += o.sequences;
  diff_sum += o.diff_sum;
  diff_abs_max = std::max(diff_abs_max, o.diff_abs_max);
  weight_sum += o.weight_sum;
  weight_count += o.weight_count;
  weight_min = std::min(weight_min, o.weight_min);
  weight_max = std::max(weight_max, o.weight_max);
  truncated += o.truncated;
  rejected += o.rejected;
}

MismatchStats mismatch_stats(const at::Tensor& train_lp, const at::Tensor& sampler_lp, const at::Tensor& mask,
                             const IsOptions& o) {
  torch::NoGradGuard g;
  const auto valid = mask > 0;
  const auto d = torch::where(valid, (train_lp - sampler_lp).to(torch::kDouble), torch::zeros_like(mask, torch::kDouble));
  // Weights at the configured level, log-clamped so a product over a long sequence stays finite in the metrics.
  auto lw = log_weights(train_lp.to(torch::kDouble), sampler_lp.to(torch::kDouble), mask, o.level).clamp(-80, 80);
  const auto counted = o.level == IsLevel::kToken ? valid : torch::ones(lw.sizes(), valid.options());
  const auto w = torch::exp(lw);
  const double inf = std::numeric_limits<double>::infinity();
  const auto above = counted & (lw > std::log(o.cap));
  const auto below = counted & (lw < std::log(o.floor));
  auto v = torch::stack({mask.sum().to(torch::kDouble), d.sum(), d.abs().max(), torch::where(counted, w, 0.0).sum(),
                         counted.sum().to(torch::kDouble), torch::where(counted, w, inf).min(),
                         torch::where(counted, w, -inf).max(), above.sum().to(torch::kDouble),
                         (above | below).sum().to(torch::kDouble)})
               .to(torch::kCPU);
  auto a = v.accessor<double, 1>();
  MismatchStats s;
  s.tokens = a[0];
  s.sequences = static_cast<double>(mask.size(0));
  s.diff_sum = a[1];
  s.diff_abs_max = a[2];
  s.weight_sum = a[3];
  s.weight_count = a[4];
  s.weight_min = a[4] > 0 ? a[5] : 1e300;
  s.weight_max = a[4] > 0 ? a[6] : -1e300;
  s.truncated = a[7];
  s.rejected = o.mode == IsCorrection::kMis ? a[8] : 0.0;
  return s;
}

}  // namespace gspo::algo
