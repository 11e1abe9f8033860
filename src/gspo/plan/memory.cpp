#include "gspo/plan/memory.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "gspo/core/error.h"

namespace gspo::plan {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string num(double v) {
  std::ostringstream o;
  if (std::abs(v) >= 1e9) o.precision(4);
  else o.precision(6);
  o << v;
  return o.str();
}

std::string mib(double bytes) { return num(std::round(bytes / kMiB)) + " MiB"; }

double sum(const std::vector<Term>& ts) {
  double s = 0;
  for (const auto& t : ts) s += t.bytes;
  return s;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// Per token of one decoder layer, what autograd keeps for backward (scripts/gspo_model.py's Block, read op by op):
//   each RMSNorm: its float32 input copy (4H) and its normalised output in the weights' dtype (H): 2 norms;
//   the q/k/v projections' shared input (H); Qwen3's q/k norms the same over Q + K; RoPE keeps nothing large
//   (cos/sin are constants); SDPA keeps q, k, v, its output (2Q + 2K) and a float32 logsumexp per head; o_proj
//   its (copied) input (Q);
//   dense MLP: its input (H), gate and up outputs, silu's output, their product (4I);
//   MoE MLP: the router's input (H) and float32 softmax (4E); per routed copy (top-k of them) the expert's input (H),
//   its 4 intermediate tensors (4 I_moe) and its output kept for the gating product (H).
double layer_saved_bytes_per_token(const ModelShape& s, int64_t layer, double b) {
  const double H = s.hidden_size, Q = s.num_heads * s.head_dim, K = s.num_kv_heads * s.head_dim;
  double n = 2 * (4 * H + b * H) + b * H;              // two norms, the qkv input
  if (s.qk_norm) n += (4 + b) * (Q + K);
  n += b * (2 * Q + 2 * K) + 4.0 * s.num_heads + b * Q;  // SDPA, o_proj input
  if (s.is_moe_layer(layer)) {
    n += b * H + 4.0 * s.num_experts;
    n += s.experts_per_token * b * (2 * H + 4.0 * s.moe_intermediate_size);
  } else {
    n += b * (H + 4.0 * s.intermediate_size);
  }
  return n;
}

// Without autograd a layer's forward holds, at its widest (the MLP): its input and the residual output (2H), the
// norm's float32 copy (4H), and gate, up and their product (3I) -- or, in an MoE layer, the router's float32 softmax
// (4E), the accumulated output (H) and one expert's 3 intermediates over at most every token (3 I_moe).
double layer_nograd_bytes_per_token(const ModelShape& s, int64_t layer, double b) {
  const double H = s.hidden_size;
  double n = 2 * b * H + 4 * H;
  if (s.is_moe_layer(layer)) n += 4.0 * s.num_experts + b * H + 3 * b * s.moe_intermediate_size;
  else n += 3 * b * s.intermediate_size;
  return n;
}

MemoryPlan plan_memory(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in) {
  const auto& ro = cfg.rollout;
  const auto& al = cfg.algorithm;
  const auto& tr = cfg.train;
  const int64_t W = in.world_size;
  if (W < 1) throw ConfigError("--world-size must be >= 1 (got " + std::to_string(W) + ")");
  if (ro.prompts_per_step % W != 0)
    throw ConfigError("rollout.prompts_per_step (" + std::to_string(ro.prompts_per_step) +
                      ") must be a multiple of --world-size (" + std::to_string(W) + "): each rank takes whole groups");
  if (in.prompt_tokens < 1) throw ConfigError("--prompt-tokens must be >= 1");
  MemoryPlan p;
  p.shape = shape;
  const double N = static_cast<double>(shape.num_parameters());
  p.parameters = shape.num_parameters();
  const bool bf16 = cfg.model.dtype == config::Dtype::kBFloat16;
  const double b = bf16 ? 2 : 4;  // training weights' bytes
  const std::string bs = bf16 ? "2" : "4";
  const bool zero1 = cfg.distributed.zero_stage == 1;
  const std::string n = num(N);

  // Resident: what a rank holds from the first update on, through every phase.
  p.resident.push_back({"weights", N * b, n + " params x " + bs + " B (model.dtype)"});
  p.resident.push_back({"gradients", 4 * N, n + " x 4 B float32 (" + std::string(bf16 ? "the masters' gradients" :
                        "the weights' gradients") + "; zeroed, not freed, between steps)"});
  if (bf16) p.resident.push_back({"master weights", 4 * N, n + " x 4 B float32"});
  const double shard = zero1 ? static_cast<double>(ceil_div(p.parameters, W)) : N;
  p.resident.push_back({"AdamW moments", 8 * shard, num(shard) + " x 8 B (exp_avg, exp_avg_sq)" +
                        std::string(zero1 ? ", ZeRO-1: 1/" + std::to_string(W) + " of them" : "")});
  if (zero1) p.resident.push_back({"ZeRO-1 gradient shard", 4 * shard, num(shard) + " x 4 B"});
  if (ro.dtype == config::RolloutDtype::kBFloat16)
    p.resident.push_back({"bf16 sampling copy", 2 * N, n + " x 2 B (rollout.dtype bfloat16)"});
  if (al.kl_coef > 0) p.resident.push_back({"reference model", N * b, n + " x " + bs + " B (algorithm.kl_coef > 0)"});
  p.resident.push_back({"runtime", in.runtime_mb * kMiB, num(in.runtime_mb) + " MiB: LibTorch and the binary "
                        "before any model (measured, --runtime-mb)"});
  p.resident_bytes = sum(p.resident);

  // Sizes of the step.
  const int64_t S = ro.max_new_tokens, P = in.prompt_tokens, T = P + S;
  p.columns = T;
  p.rows_per_rank = ro.prompts_per_step / W * ro.group_size;
  const int64_t mini_rows = ceil_div(p.rows_per_rank, std::max<int64_t>(1, al.num_minibatches));
  int64_t m = al.micro_batch_size > 0 ? std::min(al.micro_batch_size, mini_rows) : mini_rows;
  if (al.micro_batch_tokens > 0) m = std::min(m, std::max<int64_t>(1, al.micro_batch_tokens / T));
  p.micro_rows = m;
  p.micro_tokens = m * T;
  const double Tm = static_cast<double>(p.micro_tokens);
  const double H = shape.hidden_size, V = shape.vocab_size, L = shape.num_layers;
  const bool per_layer = tr.activation_checkpointing || tr.chunked_head;
  const bool chunked = tr.chunked_head && tr.logprob_chunk_tokens > 0;
  const double head_tokens = chunked ? std::min<double>(tr.logprob_chunk_tokens, static_cast<double>(m * S))
                                     : static_cast<double>(m * S);
  const std::string head_what = chunked ? "chunk of " + num(head_tokens) + " tokens (train.logprob_chunk_tokens)"
                                        : "whole head: " + std::to_string(m) + " rows x " + std::to_string(S) +
                                              " response tokens";

  // Rollout.
  {
    PhasePlan ph{"rollout", {}, 0};
    const double sb = ro.dtype == config::RolloutDtype::kBFloat16 ? 2 : b;
    const double kv_tok = L * 2 * shape.num_kv_heads * shape.head_dim * sb;
    const double row = kv_tok * T;
    int64_t rows = p.rows_per_rank;
    std::string why = std::to_string(rows) + " rows (no budget)";
    if (ro.kv_cache_mb > 0) {
      rows = std::min<int64_t>(rows, std::max<int64_t>(1, static_cast<int64_t>(ro.kv_cache_mb * kMiB / row)));
      why = std::to_string(rows) + " rows in rollout.kv_cache_mb " + std::to_string(ro.kv_cache_mb);
    }
    p.kv_rows = rows;
    ph.terms.push_back({"KV cache", rows * row, why + " x " + std::to_string(T) + " columns x " + num(kv_tok) +
                        " B (layers x 2 x KV heads x head_dim x " + num(sb) + " B)"});
    const bool drops = ro.min_new_tokens < ro.max_new_tokens && !(ro.kv_cache_mb > 0 && ro.continuous_batching);
    if (drops)
      ph.terms.push_back({"cache compaction copy", 0.75 * rows * row, "0.75 x the cache: dropping finished rows "
                          "copies the live rows while the old cache lives (static batches; docs/performance.md)"});
    const double prefill_tokens = static_cast<double>(ro.prompts_per_step / W) * P;
    double widest = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l) widest = std::max(widest, layer_nograd_bytes_per_token(shape, l, sb));
    ph.terms.push_back({"prefill", prefill_tokens * widest, num(prefill_tokens) + " prompt tokens x " + num(widest) +
                        " B (one layer's forward without autograd)"});
    ph.terms.push_back({"decode logits", rows * V * 4 * 3, std::to_string(rows) + " rows x vocab x 4 B x 3 "
                        "(float32 logits, probabilities, sampling scratch)"});
    ph.peak_bytes = p.resident_bytes + sum(ph.terms);
    p.phases.push_back(ph);
  }
  // Old log-probs: one micro-batch's forward without autograd at a time.
  {
    PhasePlan ph{"logprobs", {}, 0};
    double widest = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l) widest = std::max(widest, layer_nograd_bytes_per_token(shape, l, b));
    ph.terms.push_back({"layer forward", Tm * widest, num(Tm) + " tokens x " + num(widest) + " B"});
    ph.terms.push_back({"head", head_tokens * V * (b + 8), head_what + " x vocab x (" + bs + " + 8) B (logits, "
                        "float32 copy and log-softmax)"});
    ph.peak_bytes = p.resident_bytes + sum(ph.terms);
    p.phases.push_back(ph);
  }
  // Update: the backward of one micro-batch, or the optimizer step, whichever is larger.
  std::vector<Term> backward_terms;
  {
    PhasePlan ph{"update", {}, 0};
    double saved_all = 0, saved_max = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l) {
      const double a = layer_saved_bytes_per_token(shape, l, b);
      saved_all += a;
      saved_max = std::max(saved_max, a);
    }
    std::vector<Term> backward;
    if (per_layer && tr.activation_checkpointing) {
      backward.push_back({"layer inputs (checkpointed)", Tm * L * H * b, num(Tm) + " tokens x " + num(L) +
                          " layers x " + num(H) + " x " + bs + " B"});
      backward.push_back({"one layer recomputed", Tm * saved_max, num(Tm) + " tokens x " + num(saved_max) +
                          " B (the widest layer's saved tensors)"});
    } else {
      backward.push_back({"activations (no checkpointing)", Tm * saved_all, num(Tm) + " tokens x " + num(saved_all) +
                          " B (every layer's saved tensors)"});
    }
    double widest_ng = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l) widest_ng = std::max(widest_ng, layer_nograd_bytes_per_token(shape, l, b));
    backward.push_back({"backward working set", Tm * widest_ng, num(Tm) + " tokens x " + num(widest_ng) +
                        " B (a layer's gradients in flight, as wide as its forward)"});
    backward.push_back({"head", head_tokens * V * (b + 12), head_what + " x vocab x (" + bs + " + 12) B (logits, "
                        "float32 log-softmax, their gradients)"});
    if (bf16 && chunked)
      backward.push_back({"head gradient accumulator", V * H * 4, "vocab x hidden x 4 B (float32 sum over the chunks "
                          "of a 16-bit head's weight gradient)"});
    if (bf16) backward.push_back({"bf16 gradients", 2 * N, n + " x 2 B, until added into the masters"});
    std::vector<Term> step;
    const double big = static_cast<double>(shape.largest_parameter());
    if (zero1) {
      const double flat = static_cast<double>(shard * W);
      step.push_back({"ZeRO-1 flat copies", 8 * flat + 16 * shard, "flat weights and their all-gather, 2 x " +
                      num(flat) + " x 4 B, plus 4 shard temporaries"});
    } else {
      step.push_back({"AdamW temporaries", 8 * big, "2 x the largest tensor (" + num(big) + ") x 4 B"});
      if (W > 1)
        step.push_back({"all-reduce buckets", 2 * cfg.distributed.bucket_mb * kMiB,
                        "2 x distributed.bucket_mb " + num(cfg.distributed.bucket_mb)});
    }
    backward_terms = backward;
    const bool step_wins = sum(step) > sum(backward);
    ph.terms = step_wins ? step : backward;
    if (step_wins) p.notes.push_back("the update's peak is the optimizer step, not the backward");
    ph.peak_bytes = p.resident_bytes + sum(ph.terms);
    p.phases.push_back(ph);
  }
  for (const auto& ph : p.phases)
    if (ph.peak_bytes > p.peak_bytes) {
      p.peak_bytes = ph.peak_bytes;
      p.peak_phase = ph.name;
    }

  // What sharding gspo does not have yet would save (same formulas; not available).
  if (W > 1) {
    const double state = N * b + 4 * N + (bf16 ? 4 * N : 0) + 8 * N;
    const double kept = state / W;
    double layer_max = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l)
      layer_max = std::max(layer_max, static_cast<double>(shape.layer_parameters(l)));
    const double gathered = 2 * layer_max * b;
    double held = 0;
    for (const auto& t : p.resident)
      if (t.name != "runtime" && t.name != "bf16 sampling copy" && t.name != "reference model") held += t.bytes;
    p.not_built.push_back({"ZeRO-3 (not available)", held - kept - gathered,
                           "saves: weights, gradients, masters and moments cut to 1/" + std::to_string(W) + " (" +
                               mib(kept) + ") plus two gathered layers (" + mib(gathered) +
                               "), instead of " + mib(held) + "; the rollout then needs a gathered " +
                               (bf16 ? "bf16" : "float32") + " copy (" + mib(N * b) + ")"});
    // The same phases over ZeRO-3's resident state: the rollout adds its gathered copy; the backward keeps a
    // layer's 16-bit gradients at a time (reduce-scattered as each layer finishes) instead of all of them.
    const double base = p.resident_bytes - held + kept + gathered;
    double back = 0;
    for (const auto& t : backward_terms) back += t.name == "bf16 gradients" ? gathered : t.bytes;
    const double roll = base + (p.phases[0].peak_bytes - p.resident_bytes) + N * b;
    const double logp = base + (p.phases[1].peak_bytes - p.resident_bytes);
    const double upd = base + back;
    p.not_built.push_back({"ZeRO-3 peak per rank (not available)", std::max({roll, logp, upd}),
                           "rollout " + mib(roll) + " (with the gathered copy), old log-probs " + mib(logp) +
                               ", update " + mib(upd)});
  }
  if (!shape.moe_layers.empty() && W > 1) {
    const double expert = static_cast<double>(shape.moe_layers.size()) * shape.num_experts * 3 * H *
                          shape.moe_intermediate_size;
    const double per_param = b + 4 + (bf16 ? 4 : 0) + (zero1 ? 8.0 / W : 8.0);
    p.not_built.push_back({"expert parallelism over " + std::to_string(W) + " ranks (not available)",
                           expert * per_param * (1 - 1.0 / W),
                           "saves: " + num(expert) + " expert params x " + num(per_param) + " B x (1 - 1/" +
                               std::to_string(W) + ")"});
  }
  p.notes.push_back("prompt length " + std::to_string(P) + " tokens (--prompt-tokens), responses at max_new_tokens " +
                    std::to_string(S) + ": every row at full length");
  if (ro.kv_cache_fraction > 0)
    p.notes.push_back("rollout.kv_cache_fraction sizes the cache from the memory free at run time: not modelled");
  if (!per_layer) p.notes.push_back("train.activation_checkpointing and chunked_head off: the model's logits_from path");
  return p;
}

}  // namespace gspo::plan
