// Shared-prefix training (#71, train/shared_prefix.h) side by side with the unshared per-layer pass, in one process on
// the same rows: the no-grad log-prob pass (the old-log-prob and reference passes) and the update's forward + backward
// (activation checkpointing on, as gspo train runs it), each timed unshared, packed (each group one row under a tree
// mask) and split (the model's shared_layer: prompts and responses apart) in rotating order, the median of --reps,
// with the process's resident peak of each (core/resources.h phase peaks) and the tokens each runs through the layers.
// It also prints the largest log-prob difference of each shared layout from the unshared one (float32).
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

enum Layout { kUnshared, kPacked, kSplit };
const char* const kNames[] = {"unshared", "packed", "split"};

// One pass: the log-probs without gradients, or forward + backward of sum(lp * w). Returns the log-probs.
at::Tensor pass(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P, bool grad,
                const Args& a, const std::vector<int64_t>& group, Layout layout, Measure& m) {
  const c10::Device cpu(c10::kCPU);
  core::reset_phase_peaks(cpu);
  for (auto& p : policy.parameters()) p.mutable_grad() = at::Tensor();
  train::KnownShape known;
  if (layout != kUnshared) known.prompt_group = group;  // packed: the ids as packs, each group one row
  known.whole_groups = layout == kSplit;
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

  if (!policy.has_shared_layer()) {
    std::fprintf(stderr, "%s has no shared_layer method: re-export it with scripts/gspo_model.py\n", a.model.c_str());
    return 2;
  }
  Measure lp_m[3], up_m[3];
  at::Tensor lps[3];
  for (int64_t rep = 0; rep < a.reps; ++rep)
    for (int k = 0; k < 3; ++k) {  // rotate the order: no layout always runs first or on a warm cache
      const auto layout = static_cast<Layout>((k + rep) % 3);
      lps[layout] = pass(policy, ids, mask, P, false, a, group, layout, lp_m[layout]);
      pass(policy, ids, mask, P, true, a, group, layout, up_m[layout]);
    }
  const double unshared_tokens = static_cast<double>(n * (P + R)), shared_tokens = static_cast<double>(a.groups * P + n * R);
  std::printf("shared prefix: %lld groups of %lld rows, prompt %lld, response %lld, %d threads, checkpointing %s, "
              "median of %lld\n", static_cast<long long>(a.groups), static_cast<long long>(a.group),
              static_cast<long long>(P), static_cast<long long>(R), torch::get_num_threads(),
              a.checkpoint ? "on" : "off", static_cast<long long>(a.reps));
  std::printf("| pass | layout | s | speed-up | peak MB | max |lp - unshared| |\n|---|---|---|---|---|---|\n");
  for (int up = 0; up < 2; ++up)
    for (int k = 0; k < 3; ++k) {
      const Measure& m = up ? up_m[k] : lp_m[k];
      const Measure& base = up ? up_m[0] : lp_m[0];
      std::printf("| %s | %s | %.3f | %.2fx | %.0f | %.1e |\n", k ? "" : up ? "update (fwd + bwd)" : "log-probs (no grad)",
                  kNames[k], m.median(), base.median() / m.median(), m.peak_mb,
                  (lps[k] - lps[0]).abs().max().item<double>());
    }
  std::printf("tokens through the layers: %.0f unshared, %.0f shared (%.2fx)\n", unshared_tokens, shared_tokens,
              unshared_tokens / shared_tokens);
  std::printf("{\"prompt\": %lld, \"response\": %lld, \"group\": %lld, \"groups\": %lld, "
              "\"logprob_s\": [%.4f, %.4f, %.4f], \"update_s\": [%.4f, %.4f, %.4f], "
              "\"logprob_peak_mb\": [%.1f, %.1f, %.1f], \"update_peak_mb\": [%.1f, %.1f, %.1f]}\n",
              static_cast<long long>(P), static_cast<long long>(R), static_cast<long long>(a.group),
              static_cast<long long>(a.groups), lp_m[0].median(), lp_m[1].median(), lp_m[2].median(),
              up_m[0].median(), up_m[1].median(), up_m[2].median(), lp_m[0].peak_mb, lp_m[1].peak_mb, lp_m[2].peak_mb,
              up_m[0].peak_mb, up_m[1].peak_mb, up_m[2].peak_mb);
  return 0;
}
