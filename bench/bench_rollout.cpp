// One rollout under one KV-cache schedule, for bench/run_rollout.sh (issue #23 item 7): tokens/s, peak resident
// memory and the slot figures of a single Sampler::generate call, printed as one JSON line. One process per cell so
// each peak is its own. Same prompts and noise key in every cell, so every schedule samples the same responses (up
// to near-ties) and the cells compare like with like.
// Usage: bench_rollout MODEL.pt --rows N [--group 8] [--prompt 16] [--max-new 2048] [--budget-mb M] [--static]
//        [--seed 1] [--device cpu|cuda] [--dtype same|bfloat16] [--cuda-graphs] [--kv-fraction F] [--fixed]
//   --budget-mb 0 = no budget: every row at once; --static = static batches under the budget; --kv-fraction = the
//   budget as that share of free device memory (rollout.kv_cache_fraction, CUDA); --fixed = every response exactly
//   --max-new tokens (rollout.min_new_tokens = max_new_tokens: EOS never drawn), so a reference such as transformers'
//   generate with min_new_tokens = max_new_tokens samples as many tokens. On CUDA "rollout_mb" is the caching
//   allocator's peak over the rollout less what it held before, and peak_gpu_mb its peak since the start.
//   --profile N (with --profile-out FILE.md): after the timed call, two more calls of N and 2N fixed-length tokens
//   under the profiler (bench/profile_table.h); their difference over N is one steady decode step: operators
//   dispatched, device kernels and their time (CUDA), the attention kernels named. The JSON line gains
//   "profile_ops_per_step", "profile_kernels_per_step", "profile_device_ms_per_step" and "profile_attention" (the
//   attention kernels seen, "|"-joined); FILE.md gets the tables.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gspo/core/device.h"
#include "gspo/core/huge_pages.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "profile_table.h"

using namespace gspo;

namespace {
int64_t vm_rss_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}
}  // namespace

int run(int argc, char** argv) {
  std::string path;
  int64_t rows = 64, group = 8, prompt = 16, max_new = 2048, budget_mb = 0, seed = 1;
  bool static_batches = false, graphs = false, fixed = false;
  double kv_fraction = 0;
  int64_t profile_steps = 0;
  std::string device_spec = "cpu", dtype = "same", profile_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return std::stoll(argv[++i]); };
    if (a == "--rows" && i + 1 < argc) rows = next();
    else if (a == "--group" && i + 1 < argc) group = next();
    else if (a == "--prompt" && i + 1 < argc) prompt = next();
    else if (a == "--max-new" && i + 1 < argc) max_new = next();
    else if (a == "--budget-mb" && i + 1 < argc) budget_mb = next();
    else if (a == "--seed" && i + 1 < argc) seed = next();
    else if (a == "--static") static_batches = true;
    else if (a == "--cuda-graphs") graphs = true;
    else if (a == "--fixed") fixed = true;
    else if (a == "--kv-fraction" && i + 1 < argc) kv_fraction = std::stod(argv[++i]);
    else if (a == "--device" && i + 1 < argc) device_spec = argv[++i];
    else if (a == "--dtype" && i + 1 < argc) dtype = argv[++i];
    else if (a == "--profile" && i + 1 < argc) profile_steps = next();
    else if (a == "--profile-out" && i + 1 < argc) profile_out = argv[++i];
    else path = a;
  }
  if (path.empty() || rows % group != 0 || (dtype != "same" && dtype != "bfloat16")) {
    std::fprintf(stderr, "usage: %s MODEL.pt --rows N [--group G (divides N)] [--prompt 16] [--max-new 2048] "
                 "[--budget-mb M] [--static] [--seed 1] [--device cpu|cuda] [--dtype same|bfloat16] "
                 "[--cuda-graphs] [--kv-fraction F] [--fixed] [--profile N [--profile-out FILE.md]]\n", argv[0]);
    return 2;
  }
  const c10::Device device = core::resolve_device(device_spec, "--device");
  auto policy = model::Policy::load(path, device);
  if (dtype == "bfloat16") policy.set_param_dtype(torch::kBFloat16);
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), path);
  rollout::SamplingParams p{1.0, 1.0, 0, max_new, {}};
  p.kv_cache_bytes = budget_mb << 20;
  p.kv_cache_fraction = kv_fraction;
  p.continuous = !static_batches;
  p.cuda_graphs = graphs ? config::CudaGraphs::kOn : config::CudaGraphs::kOff;
  if (fixed) p.min_new_tokens = max_new;
  rollout::Sampler sampler(policy, *tok, p);
  std::vector<std::vector<int64_t>> prompts(rows / group);
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (tok->bos_id() >= 0) prompts[b].push_back(tok->bos_id());  // Qwen3's tokenizer has none
    for (auto t = static_cast<int64_t>(prompts[b].size()); t < prompt; ++t)
      prompts[b].push_back(static_cast<int64_t>('a' + (b * 7 + t * 3) % 26));
  }
  {  // warm-up: the interpreter's specialised graphs and the BLAS buffers a decode step needs, whatever the schedule
    rollout::SamplingParams w = p;
    w.max_new_tokens = 8;
    w.min_new_tokens = std::min<int64_t>(w.min_new_tokens, 8);
    rollout::Sampler warm(policy, *tok, w);
    warm.generate({prompts[0]}, group, {static_cast<uint64_t>(seed) + 1, 0});
  }
  const bool cuda = device.is_cuda();
  if (cuda) torch::cuda::synchronize();
  core::reset_phase_peaks(device);
  const int64_t base = cuda ? core::phase_peak_bytes(device) : vm_rss_bytes();  // CUDA: allocated now
  auto batch = sampler.generate(prompts, group, {static_cast<uint64_t>(seed), 0});
  const auto& st = sampler.last_stats();
  const int64_t peak = core::phase_peak_bytes(device);
  int64_t longest = 0;
  for (auto l : batch.response_lengths) longest = std::max(longest, l);
  const double tokens = static_cast<double>(batch.generated_tokens());
  std::ostringstream os;
  os << "{\"rows\": " << rows << ", \"budget_mb\": " << budget_mb << ", \"mode\": \""
     << (budget_mb == 0 && kv_fraction == 0 ? "all rows" : static_batches ? "static" : "continuous") << "\", \"slots\": " << st.slots
     << ", \"kv_mb\": " << st.kv_bytes / 1048576.0 << ", \"base_rss_mb\": " << base / 1048576.0
     << ", \"peak_rss_mb\": " << core::peak_rss_bytes() / 1048576.0 << ", \"rollout_mb\": " << (peak - base) / 1048576.0
     << ", \"seconds\": " << st.seconds << ", \"tokens\": " << tokens << ", \"tokens_per_s\": " << tokens / st.seconds
     << ", \"mean_len\": " << tokens / rows << ", \"max_len\": " << longest << ", \"slot_util\": " << st.slot_util()
     << ", \"prefill_tokens\": " << st.prefill_tokens << ", \"decode_steps\": " << st.decode_steps
     << ", \"threads\": " << at::get_num_threads() << ", \"device\": \"" << device.str() << "\", \"dtype\": \""
     << dtype << "\", \"cuda_graphs\": " << (graphs ? "true" : "false") << ", \"graph_captures\": "
     << st.graph_captures << ", \"capture_s\": " << st.capture_seconds << ", \"host_syncs\": " << st.host_syncs << ", \"kv_fraction\": " << kv_fraction
     << ", \"peak_gpu_mb\": " << (cuda ? core::peak_device_bytes(device) / 1048576.0 : 0.0) << "}";
  if (profile_steps > 0) {
    // Two calls of N and 2N tokens (every response exactly that long): their difference is N steady decode steps.
    auto run_for = [&](int64_t n) {
      rollout::SamplingParams q = p;
      q.max_new_tokens = q.min_new_tokens = n;
      rollout::Sampler s(policy, *tok, q);
      return bench::profile([&] {
        s.generate(prompts, group, {static_cast<uint64_t>(seed), 0});
        if (cuda) torch::cuda::synchronize();
      }, cuda);
    };
    const auto a = run_for(profile_steps), b = run_for(2 * profile_steps);
    const auto step = bench::difference(a, b);
    const double n = static_cast<double>(profile_steps);
    std::string attention;
    for (const auto& [name, v] : step.kernels)  // more than once a step: the sampler's softmax runs once
      if (bench::attention_kernel(name) && v.calls > profile_steps) attention += (attention.empty() ? "" : "|") + bench::cell_name(name, 60);
    os.seekp(-1, std::ios_base::end);  // reopen the JSON object
    os << ", \"profile_steps\": " << profile_steps << ", \"profile_ops_per_step\": " << step.op_calls() / n
       << ", \"profile_kernels_per_step\": " << step.kernel_calls() / n << ", \"profile_device_ms_per_step\": "
       << step.device_us() / 1000.0 / n << ", \"profile_wall_ms_per_step\": " << step.wall_ms / n
       << ", \"profile_attention\": \"" << attention << "\"}";
    if (!profile_out.empty()) {
      std::ofstream md(profile_out, std::ios::app);
      md << bench::profile_markdown(step, profile_steps,
                                    std::to_string(rows) + " rows, " + device.str() + (graphs ? ", CUDA graphs" : "") +
                                        ", " + dtype + ": one decode step (" + std::to_string(profile_steps) +
                                        " steps profiled)");
    }
  }
  std::printf("%s\n", os.str().c_str());
  return 0;
}

int main(int argc, char** argv) {
  core::default_huge_pages();
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_rollout: %s\n", e.what());
    return 1;
  }
}
