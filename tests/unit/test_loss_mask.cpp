// The per-token loss mask (RolloutBatch::loss_mask): tokens written into a response for the policy (a tool's
// output, once tools insert them) sit between its own tokens but are not trained on. A hole in the mask must be
// exactly as if those tokens were not there: every loss, GSPO's length normalisation and the KL term count the
// masked tokens only, and no gradient reaches the masked positions. The compacted rows are the reference.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/algo/loss.h"
#include "gspo/rollout/batch_merge.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/step.h"

using namespace gspo;

namespace {

struct Pass {
  at::Tensor loss, grad;
  algo::LossStats stats;
};

Pass run(const at::Tensor& lp0, const at::Tensor& old, const at::Tensor& ref, const at::Tensor& mask,
         const at::Tensor& adv, algo::LossKind kind) {
  auto lp = lp0.clone().requires_grad_(true);
  algo::LossOptions o;
  o.kind = kind;
  o.clip_low = config::default_clip(kind).low;
  o.clip_high = config::default_clip(kind).high;
  o.kl_coef = 0.05;
  auto r = algo::policy_loss({lp, old, mask, adv, ref, {}, {}, {}}, o);
  r.loss.backward();
  return {r.loss.detach(), lp.grad(), r.stats};
}

}  // namespace

TEST_CASE("a hole in the loss mask is as if the tokens were not there: loss, length normalisation, KL, gradient",
          "[algo][loss_mask]") {
  torch::manual_seed(5);
  const int64_t R = 6;
  // Row 0: the policy wrote tokens 0, 1 and 4, 5; tokens 2, 3 came from a tool. Row 1: 4 tokens, then padding.
  const auto mask = torch::tensor({1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0}, torch::kFloat).view({2, R});
  auto lp = torch::randn({2, R}) * 0.3 - 1.5, old = lp + torch::randn({2, R}) * 0.2, ref = lp + torch::randn({2, R}) * 0.2;
  // Garbage where the mask is 0: it must not matter.
  const auto hole = mask == 0;
  lp = lp.masked_fill(hole, 40.0), old = old.masked_fill(hole, -40.0), ref = ref.masked_fill(hole, 7.0);
  const auto adv = torch::tensor({0.7f, -1.1f});
  // The compacted rows: row 0 keeps columns 0, 1, 4, 5; row 1 columns 0 .. 3.
  const auto keep0 = torch::tensor({0, 1, 4, 5}, torch::kLong), keep1 = torch::tensor({0, 1, 2, 3}, torch::kLong);
  auto compact = [&](const at::Tensor& t) { return torch::stack({t[0].index_select(0, keep0), t[1].index_select(0, keep1)}); };
  for (auto kind : {algo::LossKind::kGspo, algo::LossKind::kGspoToken, algo::LossKind::kGrpo}) {
    INFO("loss " << config::name_of(kind));
    const auto holey = run(lp, old, ref, mask, adv, kind);
    const auto want = run(compact(lp), compact(old), compact(ref), torch::ones({2, 4}), adv, kind);
    // Same numbers summed in another order: float32 rounding only.
    CHECK(holey.loss.item<double>() == Approx(want.loss.item<double>()).epsilon(1e-6).margin(1e-7));
    CHECK((compact(holey.grad) - want.grad).abs().max().item<double>() < 1e-6);
    CHECK(holey.grad.masked_select(hole).abs().max().item<double>() == 0.0);  // nothing reaches the tool's tokens
    CHECK(holey.stats.response_tokens == 8.0);
    CHECK(holey.stats.seq_ratio_sum == Approx(want.stats.seq_ratio_sum).epsilon(1e-6));
    CHECK(holey.stats.kl_seq_sum == Approx(want.stats.kl_seq_sum).epsilon(1e-6));
  }
}

TEST_CASE("the loss mask travels with the rows: merged groups, micro-batches, trained-token counts, length metrics",
          "[algo][loss_mask]") {
  rollout::RolloutBatch b;
  b.prompt_len = 1;
  b.group_size = 2;
  b.input_ids = torch::arange(8, torch::kLong).view({2, 4});
  b.attention_mask = torch::ones({2, 4}, torch::kLong);
  b.response_mask = torch::ones({2, 3});
  b.loss_mask = torch::tensor({1, 0, 1, 1, 1, 1}, torch::kFloat).view({2, 3});
  b.behaviour_logprobs = -torch::ones({2, 3});
  for (int r = 0; r < 2; ++r) {
    b.response_lengths.push_back(3);
    b.finish.push_back(rollout::Finish::kEos);
    b.response_ids.push_back({1, 2, 3});
    b.response_text.push_back("r");
  }
  CHECK(b.trained_tokens() == std::vector<int64_t>{2, 3});  // what response_len_* and the overlong penalty count
  // The step's per-row metric columns and sample_tokens count them too, not response_lengths (3 and 3).
  train::StepMetrics sm;
  algo::Advantages adv{torch::tensor({0.5f, -0.5f}), torch::zeros({1}, torch::kBool), 0};
  train::record_rows(b, adv, sm);
  CHECK(sm.response_len.rows == std::vector<double>{2.0, 3.0});
  CHECK(sm.sample_tokens == 5);
  const auto merged = rollout::merge_groups({&b}, {{0, 0}}, 0);
  CHECK(torch::equal(merged.loss_mask, b.loss_mask));
  const auto m = train::slice_rows(b, {1, 0}, torch::zeros({2}));
  CHECK(torch::equal(m.loss_mask, torch::tensor({1, 1, 1, 1, 0, 1}, torch::kFloat).view({2, 3})));
}
