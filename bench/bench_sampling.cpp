// Sampling throughput (generated tokens/s) of gspo's batched KV-cache sampler against a plain PyTorch loop over
// the same TorchScript file (bench/reference_sampling.py), same batch, prompt length, new tokens, temperature 1,
// same thread count. Best of 3 after a warm-up.
// Usage: bench_sampling [--batches 1,8,32,64] [--reps 3] [--no-reference] MODEL.pt [MODEL.pt ...]
// (--no-reference skips the Python loop: quick A/B runs of gspo alone)
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.h"
#include "gspo/core/huge_pages.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

using namespace gspo;

int main(int argc, char** argv) {
  // gspo's huge-page default, as the gspo binary sets it; the Python reference runs with the caller's environment.
  const bool thp_default = core::default_huge_pages();
  const std::string py_env = thp_default ? "env -u THP_MEM_ALLOC_ENABLE " : "";
  std::vector<int64_t> batches = {1, 8, 32, 64};
  int reps = 3;
  bool reference = true;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--batches" && i + 1 < argc) {
      batches = bench::parse_list(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    } else if (a == "--no-reference") {
      reference = false;
    } else {
      models.push_back(a);
    }
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: %s [--batches 1,8,32,64] [--reps 3] [--no-reference] MODEL.pt [MODEL.pt ...]\n",
                 argv[0]);
    return 2;
  }
  const int64_t prompt_len = 16, new_tokens = 64;
  const int threads = at::get_num_threads();
  std::printf("sampling: prompt %lld tokens, %lld new tokens, temperature 1, %d threads, best of %d\n",
              static_cast<long long>(prompt_len), static_cast<long long>(new_tokens), threads, reps);
  std::printf("gspo: THP_MEM_ALLOC_ENABLE=%s (%s); python reference: %s\n", core::huge_pages_setting(),
              thp_default ? "gspo's default" : "from the environment",
              thp_default ? "variable unset (4 KiB pages)" : "the same environment");
  std::printf("%-28s %6s %14s %14s %8s\n", "model", "batch", "gspo tok/s", "python tok/s", "ratio");
  for (const auto& path : models) {
    auto policy = model::Policy::load(path);
    auto tok = tokenizer::from_spec(policy.tokenizer_json(), path);
    rollout::Sampler sampler(policy, *tok, {1.0, 1.0, 0, new_tokens, {}});
    for (int64_t batch : batches) {
      std::vector<std::vector<int64_t>> prompts(batch);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < prompt_len; ++t) prompts[b].push_back(((b * prompt_len + t) * 7) % 256);
      double best = 0;
      for (int rep = 0; rep <= reps; ++rep) {
        auto out = sampler.generate(prompts, 1, {static_cast<uint64_t>(rep), 0});
        const double tps = out.generated_tokens() / sampler.last_stats().seconds;
        if (rep > 0) best = std::max(best, tps);
      }
      const double ref = !reference ? 0.0
                                    : bench::python_tokens_per_s(py_env + GSPO_PYTHON + " " + GSPO_SOURCE_DIR +
                                                                 "/bench/reference_sampling.py --model " + path +
                                                                 " --batch " + std::to_string(batch) +
                                                                 " --threads " + std::to_string(threads));
      std::string name = path;
      name = name.substr(name.find_last_of('/') + 1);
      std::printf("%-28s %6lld %14.0f %14.0f %8.2f\n", name.c_str(), static_cast<long long>(batch), best, ref,
                  ref > 0 ? best / ref : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
