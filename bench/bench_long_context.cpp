// Peak memory and time of one GSPO training step on long responses of a fixed length (bench/run_long_context.sh runs
// it once per configuration, each in a fresh process, and prints the table of docs/performance.md).
//
// The step is what gspo train runs after sampling: the no-grad old-log-prob pass over every row, then one mini-batch
// of forward + backward (GSPO loss, advantages +1/-1) over micro-batches, gradient clipping and an AdamW step. The
// rows are synthetic (deterministic ids, prompt P, every response exactly L tokens): what sampling would produce
// with rollout.min_new_tokens = max_new_tokens = L, without spending minutes decoding them on a CPU.
//
// Usage: bench_long_context MODEL.pt --response L [--rows 2] [--prompt 16] [--checkpointing 0|1]
//          [--chunked-head 0|1] [--micro-tokens N] [--chunk 1024]
// Prints one JSON line: peak resident memory of the whole process and per phase (the kernel's high-water mark,
// reset between phases through /proc/self/clear_refs), seconds per phase.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "gspo/algo/loss.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"

using namespace gspo;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The process's resident peak since the last reset_peak_rss (core/resources.h: the phases of gspo train's metrics).
void reset_peak_rss() { core::reset_phase_peaks(c10::Device(c10::kCPU)); }

double peak_mb() { return static_cast<double>(core::phase_peak_bytes(c10::Device(c10::kCPU))) / (1024.0 * 1024.0); }

struct Args {
  std::string model;
  int64_t response = 1024, rows = 2, prompt = 16, micro_tokens = 0, chunk = 1024;
  bool checkpointing = true, chunked_head = true;
};

Args parse(int argc, char** argv) {
  Args a;
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 && i + 1 < argc) {
      kv[s.substr(2)] = argv[++i];
    } else {
      a.model = s;
    }
  }
  auto num = [&](const char* k, int64_t d) { return kv.count(k) ? std::stoll(kv[k]) : d; };
  a.response = num("response", a.response);
  a.rows = num("rows", a.rows);
  a.prompt = num("prompt", a.prompt);
  a.micro_tokens = num("micro-tokens", a.micro_tokens);
  a.chunk = num("chunk", a.chunk);
  a.checkpointing = num("checkpointing", 1) != 0;
  a.chunked_head = num("chunked-head", 1) != 0;
  if (a.model.empty()) throw std::runtime_error("usage: bench_long_context MODEL.pt --response L [options]");
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  auto policy = model::Policy::load(a.model);
  const int64_t n = a.rows, P = a.prompt, L = a.response, V = policy.manifest().vocab_size;
  auto ids = (torch::arange(n * (P + L), torch::kLong).view({n, P + L}) * 7 + 3).remainder(std::min<int64_t>(V, 256));
  auto mask = torch::ones({n, P + L}, torch::kLong);
  auto resp_mask = torch::ones({n, L});
  auto adv = torch::ones({n});
  adv.narrow(0, 1, n / 2).neg_();  // rows alternate +1 / -1 after a stable re-order; the values only need variance
  const train::LogprobPass pass{a.checkpointing || a.chunked_head, a.checkpointing, a.chunked_head};
  const train::LogprobPass no_grad_pass{pass.layers, false, pass.chunked_head};
  // Rows per micro-batch: as many whole rows as the token budget holds (all rows are P + L long), at least one.
  const int64_t per_micro = a.micro_tokens > 0 ? std::max<int64_t>(1, a.micro_tokens / (P + L)) : n;
  auto params = policy.parameters();
  for (auto& p : params) p.set_requires_grad(true);
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-6).weight_decay(0.0));
  const double load_mb = peak_mb();

  reset_peak_rss();
  double t0 = now_s();
  std::vector<at::Tensor> old_lp;
  {
    torch::NoGradGuard g;
    for (int64_t i = 0; i < n; i += per_micro) {
      const int64_t c = std::min(per_micro, n - i);
      old_lp.push_back(train::response_logprobs(policy, ids.narrow(0, i, c), mask.narrow(0, i, c), P, 1.0,
                                                train::Entropy::kSkip, a.chunk, no_grad_pass)
                           .logprobs);
    }
  }
  const double logprob_s = now_s() - t0, logprob_mb = peak_mb();

  reset_peak_rss();
  t0 = now_s();
  opt.zero_grad();
  double loss_sum = 0;
  for (int64_t i = 0, k = 0; i < n; i += per_micro, ++k) {
    const int64_t c = std::min(per_micro, n - i);
    auto lp = train::response_logprobs(policy, ids.narrow(0, i, c), mask.narrow(0, i, c), P, 1.0,
                                       train::Entropy::kCompute, a.chunk, pass);
    auto res = algo::policy_loss({lp.logprobs, old_lp[k], resp_mask.narrow(0, i, c), adv.narrow(0, i, c), {}, {}, {}, {}},
                                 algo::LossOptions{});
    (res.loss * (static_cast<double>(c) / static_cast<double>(n))).backward();
    loss_sum += res.loss.item<double>();
  }
  torch::nn::utils::clip_grad_norm_(params, 1.0);
  opt.step();
  const double update_s = now_s() - t0, update_mb = peak_mb();
  double grad_norm = 0;
  for (auto& p : params) grad_norm += p.grad().defined() ? p.grad().pow(2).sum().item<double>() : 0;

  std::printf(
      "{\"model\": \"%s\", \"rows\": %lld, \"prompt\": %lld, \"response\": %lld, \"checkpointing\": %d, "
      "\"chunked_head\": %d, \"micro_tokens\": %lld, \"rows_per_micro\": %lld, \"layer_api\": %d, "
      "\"load_mb\": %.0f, \"peak_mb_logprobs\": %.0f, \"peak_mb_update\": %.0f, \"logprob_s\": %.2f, "
      "\"update_s\": %.2f, \"loss\": %.6g, \"grad_sq\": %.6g, \"threads\": %d}\n",
      a.model.c_str(), static_cast<long long>(n), static_cast<long long>(P), static_cast<long long>(L),
      a.checkpointing ? 1 : 0, a.chunked_head ? 1 : 0, static_cast<long long>(a.micro_tokens),
      static_cast<long long>(per_micro), policy.has_layers() ? 1 : 0, load_mb, logprob_mb, update_mb, logprob_s,
      update_s, loss_sum, grad_norm, at::get_num_threads());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_long_context: %s\n", e.what());
  return 1;
}
