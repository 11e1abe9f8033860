// Shared-prefix training (#71, train/shared_prefix.h) side by side with the unshared per-layer pass, in one process on
// the same rows: the no-grad log-prob pass (the old-log-prob and reference passes) and the update's forward + backward
// (activation checkpointing on, as gspo train runs it), each timed unshared and shared in alternating order, the median
// of --reps, with the process's resident peak of each (core/resources.h phase peaks) and the tokens each runs through
// the layers. It also prints the largest log-prob difference between the two (the same numbers, float32).
//
// Usage: bench_shared_prefix MODEL.pt [--prompt 1024] [--response 128] [--group 16] [--groups 1] [--reps 3]
//          [--checkpoint 1] [--chunk 1024]
// bench/run_shared_prefix.sh makes a Qwen3-shaped model and runs the long-prompt and the demo-shaped workloads.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"

using namespace gspo;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  std::string model;
  int64_t prompt = 1024, response = 128, group = 16, groups = 1, reps = 3, chunk = 1024;
  bool checkpoint = true;
};

Args parse(int argc, char** argv) {
  Args a;
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 && i + 1 < argc) kv[s.substr(2)] = argv[++i];
    else a.model = s;
  }
  auto num = [&](const char* k, int64_t d) { return kv.count(k) ? std::stoll(kv[k]) : d; };
  a.prompt = num("prompt", a.prompt);
  a.response = num("response", a.response);
  a.group = num("group", a.group);
  a.groups = num("groups", a.groups);
  a.reps = num("reps", a.reps);
  a.chunk = num("chunk", a.chunk);
  a.checkpoint = num("checkpoint", 1) != 0;
  return a;
}

struct Measure {
  std::vector<double> seconds;
  double peak_mb = 0;
  double median() const {
    auto s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

// One pass: the log-probs without gradients, or forward + backward of sum(lp * w). Returns the log-probs.
at::Tensor pass(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P, bool grad,
                const Args& a, const std::vector<int64_t>& group, Measure& m) {
  const c10::Device cpu(c10::kCPU);
  core::reset_phase_peaks(cpu);
  for (auto& p : policy.parameters()) p.mutable_grad() = at::Tensor();
  train::KnownShape known;
  known.prompt_group = group;
  const double t0 = now_s();
  at::Tensor lp;
  {
    torch::AutoGradMode mode(grad);
    auto out = train::response_logprobs(policy, ids, mask, P, 1.0, train::Entropy::kSkip, a.chunk,
                                        train::LogprobPass{true, a.checkpoint && grad, true}, {}, known);
    lp = out.logprobs;
    if (grad) (lp * 1e-3).sum().backward();
  }
  m.seconds.push_back(now_s() - t0);
  m.peak_mb = std::max(m.peak_mb, static_cast<double>(core::phase_peak_bytes(cpu)) / (1024.0 * 1024.0));
  return lp.detach();
}

}  // namespace

int main(int argc, char** argv) {
  const auto a = parse(argc, argv);
  if (a.model.empty()) {
    std::fprintf(stderr, "usage: bench_shared_prefix MODEL.pt [--prompt N] [--response N] [--group G] [--groups K]\n");
    return 2;
  }
  auto policy = model::Policy::load(a.model);
  const int64_t n = a.group * a.groups, P = a.prompt, R = a.response;
  torch::manual_seed(0);
  auto ids = torch::randint(3, std::min<int64_t>(policy.manifest().vocab_size, 250), {n, P + R}, torch::kLong);
  for (int64_t r = 0; r < n; ++r) ids[r].narrow(0, 0, P).copy_(ids[(r / a.group) * a.group].narrow(0, 0, P));
  const auto mask = torch::ones({n, P + R}, torch::kLong);
  std::vector<int64_t> group;
  for (int64_t r = 0; r < n; ++r) group.push_back(r / a.group);

  Measure lp_plain, lp_shared, up_plain, up_shared;
  at::Tensor plain_lp, shared_lp;
  for (int64_t rep = 0; rep < a.reps; ++rep) {
    const bool shared_first = rep % 2 == 1;  // alternate the order: neither side always runs on a warm cache
    for (int side = 0; side < 2; ++side) {
      const bool shared = (side == 0) == shared_first;
      (shared ? shared_lp : plain_lp) = pass(policy, ids, mask, P, false, a, shared ? group : std::vector<int64_t>{},
                                             shared ? lp_shared : lp_plain);
      pass(policy, ids, mask, P, true, a, shared ? group : std::vector<int64_t>{}, shared ? up_shared : up_plain);
    }
  }
  const double diff = (shared_lp - plain_lp).abs().max().item<double>();
  const double unshared_tokens = static_cast<double>(n * (P + R)), shared_tokens = static_cast<double>(a.groups * P + n * R);
  std::printf("shared prefix: %lld groups of %lld rows, prompt %lld, response %lld, %d threads, checkpointing %s, "
              "median of %lld\n", static_cast<long long>(a.groups), static_cast<long long>(a.group),
              static_cast<long long>(P), static_cast<long long>(R), torch::get_num_threads(),
              a.checkpoint ? "on" : "off", static_cast<long long>(a.reps));
  std::printf("| pass | unshared s | shared s | speed-up | unshared peak MB | shared peak MB |\n|---|---|---|---|---|---|\n");
  std::printf("| log-probs (no grad) | %.3f | %.3f | %.2fx | %.0f | %.0f |\n", lp_plain.median(), lp_shared.median(),
              lp_plain.median() / lp_shared.median(), lp_plain.peak_mb, lp_shared.peak_mb);
  std::printf("| update (fwd + bwd) | %.3f | %.3f | %.2fx | %.0f | %.0f |\n", up_plain.median(), up_shared.median(),
              up_plain.median() / up_shared.median(), up_plain.peak_mb, up_shared.peak_mb);
  std::printf("tokens through the layers: %.0f unshared, %.0f shared (%.2fx); largest |log-prob difference| %.2e\n",
              unshared_tokens, shared_tokens, unshared_tokens / shared_tokens, diff);
  std::printf("{\"prompt\": %lld, \"response\": %lld, \"group\": %lld, \"groups\": %lld, \"logprob_s\": [%.4f, %.4f], "
              "\"update_s\": [%.4f, %.4f], \"logprob_peak_mb\": [%.1f, %.1f], \"update_peak_mb\": [%.1f, %.1f], "
              "\"max_abs_diff\": %.3e}\n",
              static_cast<long long>(P), static_cast<long long>(R), static_cast<long long>(a.group),
              static_cast<long long>(a.groups), lp_plain.median(), lp_shared.median(), up_plain.median(),
              up_shared.median(), lp_plain.peak_mb, lp_shared.peak_mb, up_plain.peak_mb, up_shared.peak_mb, diff);
  return 0;
}
