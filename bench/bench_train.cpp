// GSPO update throughput (tokens/s through forward + backward, old log-prob pass included) of gspo's training
// path against a straightforward PyTorch implementation (bench/reference_update.py) on the same TorchScript
// model and the same deterministic batch: 64 sequences, prompt 16, responses 1..48 tokens, 4 mini-batches, AdamW.
// Usage: bench_train MODEL.pt [MODEL.pt ...]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "bench_batch.h"
#include "bench_common.h"
#include "gspo/algo/loss.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"

using namespace gspo;

namespace {

double gspo_update_seconds(model::Policy& policy, torch::optim::AdamW& opt, const rollout::RolloutBatch& b,
                           const at::Tensor& adv, int64_t nmb, int64_t& tokens) {
  const int64_t n = b.num_rows(), size = n / nmb;
  std::vector<train::Micro> mbs;
  for (int64_t k = 0; k < n; k += size) {
    std::vector<int64_t> rows;
    for (int64_t i = k; i < k + size; ++i) rows.push_back(i);
    mbs.push_back(train::slice_rows(b, rows, adv));
  }
  const auto t0 = std::chrono::steady_clock::now();
  tokens = 0;
  {
    torch::NoGradGuard g;
    for (auto& m : mbs) m.old_lp = train::response_logprobs(policy, m.ids, m.mask, b.prompt_len, 1.0, train::Entropy::kSkip).logprobs;
  }
  algo::LossOptions lo;
  auto params = policy.parameters();
  for (auto& m : mbs) {
    opt.zero_grad();
    auto lp = train::response_logprobs(policy, m.ids, m.mask, b.prompt_len, 1.0, train::Entropy::kCompute).logprobs;
    auto res = algo::policy_loss({lp, m.old_lp, m.loss_mask, m.advantages, {}, {}, {}, {}}, lo);
    res.loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    opt.step();
    tokens += 2 * m.real_tokens;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.pt [MODEL.pt ...]\n", argv[0]);
    return 2;
  }
  const int64_t n = 64, P = 16, R = 48, nmb = 4;
  const int threads = at::get_num_threads();
  std::printf("GSPO update: %lld sequences, prompt %lld, responses 1..%lld, %lld mini-batches, %d threads, best of 3\n",
              static_cast<long long>(n), static_cast<long long>(P), static_cast<long long>(R),
              static_cast<long long>(nmb), threads);
  std::printf("%-28s %14s %14s %8s\n", "model", "gspo tok/s", "python tok/s", "ratio");
  for (int mi = 1; mi < argc; ++mi) {
    auto policy = model::Policy::load(argv[mi]);
    auto params = policy.parameters();
    for (auto& p : params) p.set_requires_grad(true);
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-5).weight_decay(0.0));
    auto b = bench::synthetic_batch(n, P, R);
    std::vector<float> a;
    for (int64_t i = 0; i < n; ++i) a.push_back(((i % 5) - 2) * 0.5f);
    auto adv = torch::tensor(a);
    double best = 1e300;
    int64_t tokens = 0;
    for (int rep = 0; rep < 4; ++rep) {
      const double s = gspo_update_seconds(policy, opt, b, adv, nmb, tokens);
      if (rep > 0) best = std::min(best, s);
    }
    const double ours = tokens / best;
    const double ref = bench::python_tokens_per_s(std::string(GSPO_PYTHON) + " " + GSPO_SOURCE_DIR +
                                                  "/bench/reference_update.py --model " + argv[mi] + " --threads " +
                                                  std::to_string(threads));
    std::string name = argv[mi];
    name = name.substr(name.find_last_of('/') + 1);
    std::printf("%-28s %14.0f %14.0f %8.2f\n", name.c_str(), ours, ref, ref > 0 ? ours / ref : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
