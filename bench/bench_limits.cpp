// Distance to this machine's limits (issue 13 item 5), with the LibTorch gspo links against:
//   - memory bandwidth: read-reduce (at::sum) and copy over a buffer far larger than the last-level cache, GB/s,
//     and the read bandwidth of at::linear on one row (the matrix-vector product of batch-1 decode);
//   - float32 GEMM throughput: at::mm_out on square matrices, GFLOP/s;
//   - gspo's sampler at batch 1 against the bandwidth bound (bandwidth / bytes read per decoded token);
//   - the GSPO update's model FLOPs against the GEMM peak.
// Every figure is the best of --reps timed runs after one warm-up, at 1 and at 2 intra-op threads (--threads).
//
// Usage: bench_limits [--reps N] [--threads 1,2] [--buffer-mib M] [--gemm 512,1024,2048]
//                     [--decode MODEL.pt] [--new-tokens N] [--update MODEL.pt] [--update-reps N] [--no-machine]
// Without --no-machine the bandwidth and GEMM peaks are measured first; --decode and --update are judged against
// them (at the same thread count). docs/perf/limits.md explains the formulas; bench/run_limits.sh runs it all.
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_batch.h"
#include "bench_common.h"
#include "gspo/core/huge_pages.h"
#include "gspo/algo/loss.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"

using namespace gspo;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best (smallest) wall time of `reps` runs of f after one untimed warm-up.
double best_seconds(int reps, const std::function<void()>& f) {
  f();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

struct Peaks {
  double read_gbs = 0;   // at::sum over the buffer: bytes read / s
  double copy_gbs = 0;   // dst.copy_(src): (bytes read + bytes written) / s
  double gemm_gflops = 0;  // best over the square sizes
};

// Memory bandwidth at the current thread count over a buffer of `mib` MiB (float32).
void measure_bandwidth(int64_t mib, int reps, Peaks& p) {
  const int64_t n = mib * (1 << 20) / 4;
  auto src = torch::rand({n});
  auto dst = torch::empty({n});
  const double bytes = static_cast<double>(n) * 4;
  volatile float sink = 0;
  const double t_read = best_seconds(reps, [&] { sink = sink + at::sum(src).item<float>(); });
  const double t_copy = best_seconds(reps, [&] { dst.copy_(src); });
  p.read_gbs = bytes / t_read / 1e9;
  p.copy_gbs = 2 * bytes / t_copy / 1e9;
  std::printf("  bandwidth  buffer %lld MiB: read (sum) %.1f GB/s, copy %.1f GB/s (read + write counted)\n",
              static_cast<long long>(mib), p.read_gbs, p.copy_gbs);
}

// Read bandwidth of the batch-1 matrix-vector product a decode step is made of: at::linear of a [1, in] row
// against 1 GiB of [out, in] float32 weights (several matrices, as in a model), bytes of weights / s.
void measure_gemv(int reps) {
  for (auto [out, in] : {std::pair<int64_t, int64_t>{4096, 1024}, {1024, 4096}, {1024, 1024}}) {
    const int64_t k = (int64_t{1} << 28) / (out * in);
    std::vector<at::Tensor> w;
    for (int64_t i = 0; i < k; ++i) w.push_back(torch::rand({out, in}));
    auto x = torch::rand({1, in});
    const double t = best_seconds(reps, [&] {
      for (auto& m : w) at::linear(x, m);
    });
    // The model's CPU decode path (scripts/gspo_model.py Linear): 4 blocks of output rows as one bmm.
    auto xb = x.view({1, 1, in}).expand({4, 1, in});
    const double t_split = best_seconds(reps, [&] {
      for (auto& m : w) at::bmm(xb, m.view({4, out / 4, in}).transpose(1, 2));
    });
    const double bytes = static_cast<double>(k * out * in * 4);
    std::printf("  gemv       linear [1, %lld] x [%lld, %lld]^T over 1 GiB of weights: %.1f GB/s; as 4-block bmm "
                "(gspo's decode): %.1f GB/s\n",
                static_cast<long long>(in), static_cast<long long>(out), static_cast<long long>(in), bytes / t / 1e9,
                bytes / t_split / 1e9);
  }
}

// float32 GEMM GFLOP/s (2 n^3 per product) at the current thread count; each timed run repeats the product
// enough times to last ~0.2 s.
void measure_gemm(const std::vector<int64_t>& sizes, int reps, Peaks& p) {
  for (int64_t n : sizes) {
    auto a = torch::randn({n, n}), b = torch::randn({n, n}), c = torch::empty({n, n});
    const double flop = 2.0 * n * n * n;
    auto t0 = Clock::now();
    at::mm_out(c, a, b);
    const int inner = std::max(1, static_cast<int>(0.2 / std::max(1e-6, seconds_since(t0))));
    const double t = best_seconds(reps, [&] {
      for (int i = 0; i < inner; ++i) at::mm_out(c, a, b);
    });
    const double gf = flop * inner / t / 1e9;
    p.gemm_gflops = std::max(p.gemm_gflops, gf);
    std::printf("  gemm       %5lld x %-5lld float32: %7.1f GFLOP/s\n", static_cast<long long>(n),
                static_cast<long long>(n), gf);
  }
}

// Parameter bytes by what a batch-1 decode step reads: the embedding contributes one row, everything else
// (lm_head included, even when tied) is read whole.
struct ModelBytes {
  double params = 0;          // every parameter, bytes
  double decode_weights = 0;  // bytes of weights one decode step reads
  double matmul_params = 0;   // parameters in matrix products (all but the embedding table and 1-d tensors)
  int64_t elem = 4;
};

ModelBytes model_bytes(const std::string& path) {
  auto m = torch::jit::load(path);
  ModelBytes mb;
  std::map<const void*, std::string> seen;
  bool tied = false;
  for (const auto& np : m.named_parameters()) {
    const auto& t = np.value;
    if (seen.count(t.data_ptr())) {
      tied = true;
      continue;
    }
    seen[t.data_ptr()] = np.name;
    mb.elem = t.element_size();
    const double bytes = static_cast<double>(t.numel()) * t.element_size();
    mb.params += bytes;
    const bool embed = np.name.find("embed_tokens") != std::string::npos;
    mb.decode_weights += embed ? static_cast<double>(t.size(1)) * t.element_size() : bytes;
    if (t.dim() >= 2 && !embed) mb.matmul_params += t.numel();
  }
  if (tied) {  // the table is also the lm_head: read whole, and a matrix product
    for (const auto& np : m.named_parameters())
      if (np.name.find("embed_tokens") != std::string::npos) {
        mb.decode_weights += static_cast<double>(np.value.numel()) * np.value.element_size();
        mb.matmul_params += np.value.numel();
      }
  }
  return mb;
}

// Decode at batch 1 through gspo's Sampler: time(prompt + new_tokens) - time(prompt + 1 token) over the decode
// steps in between, so prefill and the first sample are excluded. EOS is kept out of the sample (vocab_limit)
// when it is the last id, so every run decodes all steps. Also times a bare loop of Policy::decode + argmax.
void measure_decode(const std::string& path, int64_t new_tokens, int reps, const Peaks& peaks) {
  auto policy = model::Policy::load(path);
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), path);
  const auto& man = policy.manifest();
  const ModelBytes mb = model_bytes(path);
  const int64_t P = 16;
  std::vector<std::vector<int64_t>> prompt(1);
  for (int64_t t = 0; t < P; ++t) prompt[0].push_back((t * 7) % 256);
  rollout::SamplingParams sp{1.0, 1.0, 0, new_tokens, {}};
  if (man.eos_token_id == man.vocab_size - 1) sp.vocab_limit = man.eos_token_id;
  rollout::Sampler full(policy, *tok, sp);
  sp.max_new_tokens = 1;
  rollout::Sampler first(policy, *tok, sp);
  int64_t steps = 0;
  uint64_t seed = 0;
  const double t_full = best_seconds(reps, [&] {
    full.generate(prompt, 1, {seed++, 0});
    steps = full.last_stats().decode_steps;
  });
  const double t_first = best_seconds(reps, [&] { first.generate(prompt, 1, {seed++, 0}); });
  const double t_decode = std::max(1e-9, t_full - t_first);
  const double tps = steps / t_decode;

  // Bare loop: prefill, then decode + argmax, nothing else.
  double t_bare = 0;
  {
    torch::NoGradGuard ng;
    auto ids = torch::tensor(prompt[0], torch::kLong).view({1, P});
    auto mask = torch::ones({1, P + new_tokens}, torch::kLong);
    t_bare = best_seconds(reps, [&] {
      auto cache = policy.init_cache(1, P + new_tokens);
      auto logits = policy.prefill(ids, mask.narrow(1, 0, P), cache);
      for (int64_t s = 0; s < steps; ++s) {
        auto next = logits.argmax(-1).view({1, 1});
        logits = policy.decode(next, mask.narrow(1, 0, P + s + 1), cache, P + s);
      }
    });
    // The same loop's prefill alone, subtracted.
    const double t_pre = best_seconds(reps, [&] {
      auto cache = policy.init_cache(1, P + new_tokens);
      auto logits = policy.prefill(ids, mask.narrow(1, 0, P), cache);
      (void)logits.argmax(-1).view({1, 1});
    });
    t_bare = std::max(1e-9, t_bare - t_pre);
  }
  const double bare_tps = steps / t_bare;

  // Bytes read per decoded token: the weights, plus the KV cache up to the step's column (K and V of every layer
  // and kv head), averaged over the decode steps (columns P .. P + steps - 1, so P + 1 .. P + steps keys).
  const double kv_col = 2.0 * man.num_layers * man.num_kv_heads * man.head_dim * mb.elem;
  const double kv_avg = kv_col * (P + 1 + (steps - 1) / 2.0);
  const double bytes_tok = mb.decode_weights + kv_avg;
  const double bound = peaks.read_gbs * 1e9 / bytes_tok;
  std::printf("  decode     %s: %.1f M params (%.1f MB read per token: weights %.1f + KV %.2f), %lld steps\n",
              path.substr(path.find_last_of('/') + 1).c_str(), mb.params / mb.elem / 1e6, bytes_tok / 1e6,
              mb.decode_weights / 1e6, kv_avg / 1e6, static_cast<long long>(steps));
  std::printf("             bound %.2f tok/s (read %.1f GB/s); sampler %.2f tok/s = %.1f%% of bound; bare decode loop "
              "%.2f tok/s = %.1f%%; sampler/bare %.3f\n",
              bound, peaks.read_gbs, tps, 100 * tps / bound, bare_tps, 100 * bare_tps / bound, tps / bare_tps);
  std::printf("             effective read bandwidth of the sampler: %.1f GB/s\n", tps * bytes_tok / 1e9);
}


// The GSPO update of bench_train (64 sequences, prompt 16, responses 1..48, 4 mini-batches, AdamW): the old-log-prob
// pass (forward only) and, per mini-batch, forward, backward, gradient clipping and the AdamW step, timed apart.
// Model FLOPs: 2 N_mm per real token for a forward, 6 N_mm for forward + backward (N_mm = parameters in matrix
// products), plus causal attention 2 L H D T^2 per sequence forward (QK^T and PV, half the T x T square), x3 with
// backward.
void measure_update(const std::string& path, int reps, const Peaks& peaks) {
  auto policy = model::Policy::load(path);
  const auto& man = policy.manifest();
  const ModelBytes mb = model_bytes(path);
  auto params = policy.parameters();
  for (auto& p : params) p.set_requires_grad(true);
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-5).weight_decay(0.0));
  const int64_t n = 64, P = 16, R = 48, nmb = 4;
  auto b = bench::synthetic_batch(n, P, R);
  std::vector<float> a;
  for (int64_t i = 0; i < n; ++i) a.push_back(((i % 5) - 2) * 0.5f);
  auto adv = torch::tensor(a);
  std::vector<train::Micro> mbs;
  for (int64_t k = 0; k < n; k += n / nmb) {
    std::vector<int64_t> rows;
    for (int64_t i = k; i < k + n / nmb; ++i) rows.push_back(i);
    mbs.push_back(train::slice_rows(b, rows, adv));
  }
  int64_t real = 0, padded = 0;
  double attn_seq = 0;  // sum over sequences of T^2 (real tokens)
  for (auto& m : mbs) {
    real += m.real_tokens;
    padded += m.ids.numel();
  }
  for (int64_t i = 0; i < n; ++i) attn_seq += std::pow(P + b.response_lengths[i], 2.0);
  const double attn_fwd = 2.0 * man.num_layers * man.num_heads * man.head_dim * attn_seq;
  const double flop_fwd = 2.0 * mb.matmul_params * real + attn_fwd;
  const double flop_fwdbwd = 3 * flop_fwd;

  double best_old = 1e300, best_fwd = 1e300, best_bwd = 1e300, best_opt = 1e300, best_total = 1e300;
  algo::LossOptions lo;
  for (int rep = 0; rep <= reps; ++rep) {
    double t_old = 0, t_fwd = 0, t_bwd = 0, t_opt = 0;
    const auto t_all = Clock::now();
    {
      torch::NoGradGuard g;
      const auto t0 = Clock::now();
      for (auto& m : mbs)
        m.old_lp = train::response_logprobs(policy, m.ids, m.mask, P, 1.0, train::Entropy::kSkip).logprobs;
      t_old = seconds_since(t0);
    }
    for (auto& m : mbs) {
      opt.zero_grad();
      auto t0 = Clock::now();
      auto lp = train::response_logprobs(policy, m.ids, m.mask, P, 1.0, train::Entropy::kCompute).logprobs;
      auto res = algo::policy_loss({lp, m.old_lp, m.loss_mask, m.advantages, {}, {}, {}, {}}, lo);
      t_fwd += seconds_since(t0);
      t0 = Clock::now();
      res.loss.backward();
      t_bwd += seconds_since(t0);
      t0 = Clock::now();
      torch::nn::utils::clip_grad_norm_(params, 1.0);
      opt.step();
      t_opt += seconds_since(t0);
    }
    const double total = seconds_since(t_all);
    if (rep == 0) continue;  // warm-up
    if (total < best_total) {
      best_total = total;
      best_old = t_old;
      best_fwd = t_fwd;
      best_bwd = t_bwd;
      best_opt = t_opt;
    }
  }
  const double flop_total = flop_fwd + flop_fwdbwd;
  const double update = best_fwd + best_bwd + best_opt;
  std::printf("  update     %s: %.1f M params (%.1f M in matmuls), %lld real tokens (%lld with padding) per pass\n",
              path.substr(path.find_last_of('/') + 1).c_str(), mb.params / mb.elem / 1e6, mb.matmul_params / 1e6,
              static_cast<long long>(real), static_cast<long long>(padded));
  std::printf("             attention share of the model FLOPs %.2f%%; GEMM peak %.1f GFLOP/s\n",
              100 * attn_fwd / flop_fwd, peaks.gemm_gflops);
  std::printf("             old-log-prob pass %.3f s: %.1f GFLOP/s = %.1f%% of peak\n", best_old,
              flop_fwd / best_old / 1e9, 100 * flop_fwd / best_old / 1e9 / peaks.gemm_gflops);
  std::printf("             update (fwd %.3f + bwd %.3f + clip/AdamW %.3f = %.3f s): %.1f GFLOP/s = %.1f%% of peak\n",
              best_fwd, best_bwd, best_opt, update, flop_fwdbwd / update / 1e9,
              100 * flop_fwdbwd / update / 1e9 / peaks.gemm_gflops);
  std::printf("             whole step (old pass + update) %.3f s: %.1f%% of peak; with padded tokens counted %.1f%%\n",
              best_total, 100 * flop_total / best_total / 1e9 / peaks.gemm_gflops,
              100 * flop_total * padded / real / best_total / 1e9 / peaks.gemm_gflops);
}

}  // namespace

int main(int argc, char** argv) {
  const bool thp_default = core::default_huge_pages();  // as the gspo binary does, before any tensor exists
  int reps = 5, update_reps = 2;
  int64_t buffer_mib = 1024, new_tokens = 64;
  std::vector<int64_t> threads = {1, 2}, gemm = {512, 1024, 2048};
  std::string decode_model, update_model;
  bool machine = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--reps") reps = std::stoi(next());
    else if (a == "--threads") threads = bench::parse_list(next());
    else if (a == "--buffer-mib") buffer_mib = std::stoll(next());
    else if (a == "--gemm") gemm = bench::parse_list(next());
    else if (a == "--decode") decode_model = next();
    else if (a == "--new-tokens") new_tokens = std::stoll(next());
    else if (a == "--update") update_model = next();
    else if (a == "--update-reps") update_reps = std::stoi(next());
    else if (a == "--no-machine") machine = false;
    else {
      std::fprintf(stderr,
                   "usage: %s [--reps N] [--threads 1,2] [--buffer-mib M] [--gemm 512,1024,2048] [--decode MODEL.pt]"
                   " [--new-tokens N] [--update MODEL.pt] [--update-reps N] [--no-machine]\n",
                   argv[0]);
      return 2;
    }
  }
  // c10 backs tensors >= 2 MiB with huge pages when "1"; gspo sets it unless the environment has a value.
  std::printf("LibTorch %s, best of %d after a warm-up, THP_MEM_ALLOC_ENABLE=%s (%s)\n", TORCH_VERSION, reps,
              core::huge_pages_setting(), thp_default ? "gspo's default, as the gspo binary runs" : "from the environment");
  for (int64_t th : threads) {
    at::set_num_threads(static_cast<int>(th));
    std::printf("threads %d\n", at::get_num_threads());
    Peaks peaks;
    if (machine) {
      measure_bandwidth(buffer_mib, reps, peaks);
      measure_gemv(reps);
      measure_gemm(gemm, reps, peaks);
    }
    if (!decode_model.empty()) measure_decode(decode_model, new_tokens, std::min(reps, 3), peaks);
    if (!update_model.empty()) measure_update(update_model, update_reps, peaks);
    std::fflush(stdout);
  }
  return 0;
}
