#include "gspo/plan/memory.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <numeric>
#include <optional>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "gspo/config/validate.h"
#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/parallel/adamw8bit.h"
#include "gspo/parallel/expert_rollout.h"
#include "gspo/parallel/sharded_adamw.h"
#include "gspo/plan/plan_text.h"
#include "gspo/plan/sizes.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/rank_share.h"

namespace gspo::plan {
namespace {

// The model state by the engine training makes (z.engine, train/engines/engine_choice.h): ZeRO-0/1 (every weight and
// gradient on every rank), ZeRO-3 (shards, and the part kept whole), expert parallelism, or low-rank adapters on a
// frozen base. With distributed.optimizer_offload the moments (ZeRO-3: and the master shards) go to `host` instead.
void adapter_terms(const Sizes& z, std::vector<Term>& r, std::vector<Term>& host) {
  // model/lora.h: the base frozen (no gradients, masters, moments), the adapters float32 with AdamW
  const std::string n = num(z.N);
  const bool z3 = z.engine.kind == train::EngineKind::kZero3Adapters;
  if (z3) {  // train/engines/zero3_engine.h make_zero3_lora_engine: the base's shards, unit 0 also whole
    const double shard = std::ceil((z.N - z.N0) / static_cast<double>(z.W));  // unit 0 keeps no shard (whole)
    r.push_back({"frozen base shards", shard * z.b, num(shard) + " x " + z.bs + " B (1/" + std::to_string(z.W) +
                 " of the decoder layers in model.dtype: no gradients, masters or moments)"});
    r.push_back({"embedding, norm and head whole", z.N0 * z.b, num(z.N0) + " params x " + z.bs + " B (model.dtype)"});
  } else {
    r.push_back({"frozen base weights", z.N * z.b, n + " params x " + z.bs + " B (model.dtype; no gradients, "
                 "masters or moments)"});
  }
  const bool sharded = z.engine.sharded();  // ZeRO-3 steps the adapters with ZeRO-1
  if (z.offload)
    host.push_back({"LoRA adapters' AdamW moments", z.Na * z.mb / z.W, num(z.Na) + " x " + num(z.mb) + " B / " +
                    std::to_string(z.W) + " (this rank's shard, distributed.optimizer_offload)"});
  const double moments = sharded ? (z.offload ? 0 : z.mb / z.W) + 4.0 / z.W : z.mb;
  r.push_back({"LoRA adapters", z.Na * (8 + moments), num(z.Na) + " adapter params x (4 + 4 + " + num(moments) +
               ") B (float32 A and B, their gradients, AdamW moments" + (sharded ? " and the gradient shard: "
               "ZeRO-1" : "") + ")"});
  if (z3) return;  // sampling reads the gathered base with the adapters merged in place: no copy
  const double sb = z.cfg.rollout.dtype == config::RolloutDtype::kBFloat16 ? 2 : z.b;
  if (sb == z.b)  // model/lora.h share_untargeted: the copy's other weights are the policy's own tensors
    r.push_back({"sampling copy (adapters merged)", z.Nta * sb, num(z.Nta) + " adapted weights x " + num(sb) +
                 " B: W + (alpha / r) B A, merged after each step; the rest is shared with the base"});
  else
    r.push_back({"sampling copy (adapters merged)", z.N * sb, n + " x " + num(sb) + " B (rollout.dtype differs "
                 "from model.dtype: nothing shared)"});
}

void zero3_terms(const Sizes& z, std::vector<Term>& r, std::vector<Term>& host) {
  if (z.offload) {
    r.push_back({"ZeRO-3 gradient shards", 4 * z.shard, num(z.shard) + " x 4 B (float32: 1/" + std::to_string(z.W) +
                 " of every parameter; masters and moments in host memory)"});
    host.push_back({"ZeRO-3 masters and moments", (4 + z.mb) * z.shard, num(z.shard) + " x " + num(4 + z.mb) +
                    " B (float32 master, exp_avg and exp_avg_sq" + std::string(z.mb < 8 ? " in 8 bits" : "") +
                    ": this rank's shard, distributed.optimizer_offload)"});
  } else {
    r.push_back({"ZeRO-3 shards", (8 + z.mb) * z.shard, num(z.shard) + " x " + num(8 + z.mb) + " B (float32 master "
               "and gradient, exp_avg and exp_avg_sq" + std::string(z.mb < 8 ? " in 8 bits with an absmax per 256" :
               "") + ": 1/" + std::to_string(z.W) + " of every parameter)"});
  }
  r.push_back({"embedding, norm and head whole", z.N0 * z.b, num(z.N0) + " params x " + z.bs + " B (model.dtype)"});
  if (z.cfg.distributed.zero3_keep_whole)
    r.push_back({"decoder layers whole", (z.N - z.N0) * z.b, num(z.N - z.N0) + " x " + z.bs +
                 " B (distributed.zero3_keep_whole)"});
}

// train/engines/expert_parallel_engine.cpp: ZeRO-1 over the world for the rest, over the replicas for experts
void expert_terms(const Sizes& z, std::vector<Term>& r, std::vector<Term>& host) {
  const std::string k = num(z.Nk), e = std::to_string(z.E);
  const std::string what = k + " params (the " + num(z.N - z.Ne) + " outside the experts whole, 1/" + e + " of the " +
                           num(z.Ne) + " experts' parameters: distributed.expert_parallel " + e + ")";
  r.push_back({"weights", z.Nk * z.b, what + " x " + z.bs + " B (model.dtype)"});
  r.push_back({"gradients", 4 * z.Nk, k + " x 4 B float32"});
  if (z.bf16) r.push_back({"master weights", 4 * z.Nk, k + " x 4 B float32"});
  (z.offload ? host : r).push_back({"AdamW moments", z.mb * z.shard, num(z.shard) + " x " + num(z.mb) + " B (ZeRO-1: 1/" +
               std::to_string(z.W) + " of the rest, 1/" + std::to_string(z.R) + " of this rank's experts over the "
               "ranks holding them" + std::string(z.mb < 8 ? "; 8-bit codes and a float32 absmax per 256)" : ")")});
  r.push_back({"ZeRO-1 gradient shards", 4 * z.shard, num(z.shard) + " x 4 B"});
}

void model_state_terms(const Sizes& z, std::vector<Term>& r, std::vector<Term>& host) {
  if (z.engine.adapters) return adapter_terms(z, r, host);
  switch (z.engine.kind) {
    case train::EngineKind::kZero3: return zero3_terms(z, r, host);
    case train::EngineKind::kExpertParallel: return expert_terms(z, r, host);
    case train::EngineKind::kZero3Adapters: return adapter_terms(z, r, host);
    case train::EngineKind::kReplicated: case train::EngineKind::kZero1: break;
  }
  const std::string n = num(z.N);
  r.push_back({"weights", z.N * z.b, n + " params x " + z.bs + " B (model.dtype)"});
  r.push_back({"gradients", 4 * z.N, n + " x 4 B float32 (" + std::string(z.bf16 ? "the masters' gradients" :
               "the weights' gradients") + "; zeroed, not freed, between steps)"});
  if (z.bf16) r.push_back({"master weights", 4 * z.N, n + " x 4 B float32"});
  (z.offload ? host : r).push_back({"AdamW moments", z.mb * z.shard, num(z.shard) + " x " + num(z.mb) + " B (exp_avg, exp_avg_sq" +
               std::string(z.zero1 ? ", ZeRO-1: 1/" + std::to_string(z.W) + " of them" : "") +
               (z.mb < 8 ? ": 8-bit codes and a float32 absmax per 256, optimizer.state_bits 8)" : ")")});
  if (z.zero1) r.push_back({"ZeRO-1 gradient shard", 4 * z.shard, num(z.shard) + " x 4 B"});
}

// What a rank holds from the first update on, through every phase.
std::vector<Term> resident_terms(const Sizes& z, double runtime_mb, std::vector<Term>& host) {
  const std::string n = num(z.N);
  std::vector<Term> r;
  model_state_terms(z, r, host);
  if (z.cfg.rollout.dtype == config::RolloutDtype::kBFloat16 && z.cfg.distributed.rollout_ranks == 0 && !z.lora)
    r.push_back({"bf16 sampling copy", 2 * z.N, n + " x 2 B (rollout.dtype bfloat16)"});
  if (z.cfg.algorithm.kl_coef > 0 && !config::reference_is_base(z.cfg))  // else the frozen base is the reference
    r.push_back({"reference model", z.N * z.b, n + " x " + z.bs + " B (algorithm.kl_coef > 0)"});
  r.push_back({"runtime", runtime_mb * kMiB, num(runtime_mb) + " MiB: LibTorch and the binary before any model "
               "(measured, --runtime-mb)"});
  return r;
}

// Expert parallelism in a pass over a micro-batch: the MoE layer running holds its local experts stacked (and their
// gradients in the backward), and the tokens' rows sent to their experts and received back.
void exchange_terms(const Sizes& z, bool backward, std::vector<Term>& t) {
  if (z.E <= 1) return;
  const double k = z.shape.experts_per_token, H = z.shape.hidden_size;
  const double stacked = (backward ? 2 : 1) * z.Nle * z.b;
  t.push_back({"local experts stacked", stacked, num(z.Nle) + " params of one MoE layer's local experts x " + z.bs +
               " B" + std::string(backward ? " x 2 (and their gradients)" : "") + " (stacked per call)"});
  const double rows = (backward ? 4 : 2) * k * z.Tm * H * z.b;
  t.push_back({"expert exchange rows", rows, num(z.Tm) + " tokens x top-" + num(k) + " x " + num(H) + " x " + z.bs +
               " B x " + std::string(backward ? "4 (rows sent and received, and their gradients)" : "2 (sent and "
               "received; balanced routing)")});
}

// A training rank beside rollout ranks samples nothing: after a step that makes a version the rollout ranks need,
// trainer 0 holds the weights cast to the rollout dtype until they are taken (ZeRO-3: every decoder layer gathered).
std::vector<Term> weight_sync_terms(const Sizes& z) {
  if (z.lora)  // train/async/streamed_source.cpp: the adapters alone, never the base (nor its gather)
    return {{"adapters for the rollout ranks (trainer 0)", z.Na * 4, num(z.Na) + " x 4 B (float32 A and B), kept "
             "until every rollout rank took them; the other trainers: 0"}};
  const double sb = z.cfg.rollout.dtype == config::RolloutDtype::kBFloat16 ? 2 : z.b;
  std::vector<Term> t{{"weights for the rollout ranks (trainer 0)", z.N * sb, num(z.N) + " x " + num(sb) +
                       " B (rollout dtype), kept until every rollout rank took them; the other trainers: 0"}};
  if (z.zero3 && !z.cfg.distributed.zero3_keep_whole)
    t.push_back({"ZeRO-3 gathered layers", (z.N - z.N0) * z.b, num(z.N - z.N0) + " x " + z.bs +
                 " B (every decoder layer gathered to be sent, freed after)"});
  return t;
}

// Shared prompts (train.shared_prefix): the packed rows' tree mask, one byte a (query, key) pair.
void mask_term(const Sizes& z, std::vector<Term>& t) {
  if (z.mask > 0)
    t.push_back({"tree mask (train.shared_prefix)", z.mask, "packs x (prompt + the pack's responses)^2 x 1 B"});
}

// Old log-probs: one micro-batch's forward without autograd at a time, and the head's chunk.
std::vector<Term> logprobs_terms(const Sizes& z) {
  const double widest = z.widest(layer_nograd_bytes_per_token, z.b);
  std::vector<Term> t{{"layer forward", z.Tm * widest, num(z.Tm) + " tokens x " + num(widest) + " B"},
                      {"head", z.head_tokens * z.shape.vocab_size * (z.b + 8), z.head_what + " x vocab x (" + z.bs +
                       " + 8) B (logits, float32 copy and log-softmax)"}};
  if (z.zero3) {
    const double layers = z.cfg.distributed.zero3_overlap ? 2 : 1;
    t.push_back({"ZeRO-3 gathered layer", layers * z.Nl * z.b, num(z.Nl) + " x " + z.bs + " B (the largest)" +
                 std::string(layers > 1 ? " x 2: the next one prefetched (distributed.zero3_overlap)" : "")});
  }
  exchange_terms(z, false, t);
  mask_term(z, t);
  if (z.lora)
    t.push_back({"LoRA merged layer", z.Nt * (z.b + 4), num(z.Nt) + " targeted weights x (" + z.bs + " + 4) B (W' "
                 "and the float32 B A it is made from, the widest layer)"});
  return t;
}

// The backward of one micro-batch: saved activations (all layers', or checkpointed inputs and one layer
// recomputed), a layer's gradients in flight, the head, and bf16 gradients before they reach the masters.
std::vector<Term> backward_terms(const Sizes& z) {
  const auto& tr = z.cfg.train;
  const double H = z.shape.hidden_size, V = z.shape.vocab_size, L = z.shape.num_layers;
  double saved_all = 0;
  for (int64_t l = 0; l < z.shape.num_layers; ++l) saved_all += layer_saved_bytes_per_token(z.shape, l, z.b);
  const double saved_max = z.widest(layer_saved_bytes_per_token, z.b);
  std::vector<Term> t;
  if (tr.activation_checkpointing) {
    t.push_back({"layer inputs (checkpointed)", z.Tm * L * H * z.b, num(z.Tm) + " tokens x " + num(L) +
                 " layers x " + num(H) + " x " + z.bs + " B"});
    t.push_back({"one layer recomputed", z.Tm * saved_max, num(z.Tm) + " tokens x " + num(saved_max) +
                 " B (the widest layer's saved tensors)"});
  } else {
    t.push_back({"activations (no checkpointing)", z.Tm * saved_all, num(z.Tm) + " tokens x " + num(saved_all) +
                 " B (every layer's saved tensors)"});
  }
  const double widest = z.widest(layer_nograd_bytes_per_token, z.b);
  t.push_back({"backward working set", z.Tm * widest, num(z.Tm) + " tokens x " + num(widest) +
               " B (a layer's gradients in flight, as wide as its forward)"});
  mask_term(z, t);
  t.push_back({"head", z.head_tokens * V * (z.b + 12), z.head_what + " x vocab x (" + z.bs + " + 12) B (logits, "
               "float32 log-softmax, their gradients)"});
  if (z.bf16 && z.chunked && !z.lora)  // (a frozen head gets no weight gradient: train/head_logprobs.cpp)
    t.push_back({"head gradient accumulator", V * H * 4, "vocab x hidden x 4 B (float32 sum over the chunks of a "
                 "16-bit head's weight gradient)"});
  exchange_terms(z, true, t);
  if (z.zero3 && z.lora) {  // a frozen layer gathered (and the next one prefetched), no gradient of it reduced
    const double layers = z.cfg.distributed.zero3_overlap ? 2 : 1;
    t.push_back({"ZeRO-3 gathered layer", layers * z.Nl * z.b, num(z.Nl) + " x " + z.bs + " B (frozen: no gradients)" +
                 std::string(layers > 1 ? " x 2: the next one prefetched (distributed.zero3_overlap)" : "")});
  }
  if (z.zero3 && !z.lora) {  // a layer gathered, its gradients and their float32 flat buffer; unit 0's gradients whole
    t.push_back({"ZeRO-3 gathered layer and its gradients", z.Nl * (2 * z.b + 4), num(z.Nl) + " x (2 x " + z.bs +
                 " + 4) B (weights, gradients, float32 reduce-scatter buffer)"});
    if (z.cfg.distributed.zero3_overlap)
      t.push_back({"ZeRO-3 overlap", z.Nl * (z.b + 4), num(z.Nl) + " x (" + z.bs + " + 4) B (the next layer "
                   "prefetched, the previous layer's reduce-scatter in flight: distributed.zero3_overlap)"});
    t.push_back({"embedding and head gradients", z.N0 * z.b, num(z.N0) + " x " + z.bs +
                 " B (reduce-scattered after each micro-batch)"});
  } else if (z.lora) {
    t.push_back({"LoRA merged layer and its gradient", z.Nt * (2 * z.b + 4), num(z.Nt) + " targeted weights x (2 x " +
                 z.bs + " + 4) B (W', its gradient and the float32 B A, the widest layer; the base gets no gradient)"});
  } else if (z.bf16) {
    t.push_back({"bf16 gradients", 2 * z.Nk, num(z.Nk) + " x 2 B, until added into the masters"});
  }
  return t;
}

// ZeRO-1's step (parallel/sharded_adamw.h) over `shard` elements a rank of a group of `ranks`: the shard's weights,
// AdamW's 4 temporaries over it (8 bits: the 8-bit step's temporaries over one kStepChunk), and one chunk of every
// rank's shard in flight (the collectives go a chunk at a time).
Term zero1_step(double shard, int64_t ranks, const std::string& what, double mb, bool offload) {
  const double chunk = std::min(shard, static_cast<double>(parallel::ShardedAdamW::default_chunk(ranks)));
  const double step8 = std::min(shard, static_cast<double>(parallel::kStepChunk));
  const std::string flight = ", and a chunk of " + num(chunk) + " x " + std::to_string(ranks) + " ranks x 4 B";
  if (offload)  // the step's temporaries are the host's (add_offload)
    return {"ZeRO-1 step buffers", 4 * shard + 4 * chunk * ranks, what + ": the shard's weights, " + num(shard) +
            " x 4 B (stepped on the host a chunk at a time: distributed.optimizer_offload)" + flight};
  if (mb < 8)
    return {"ZeRO-1 step buffers", 4 * shard + 40 * step8 + 4 * chunk * ranks, what + ": the shard's weights, " +
            num(shard) + " x 4 B, the 8-bit step's 10 x 4 B over " + num(step8) + " elements" + flight};
  return {"ZeRO-1 step buffers", 20 * shard + 4 * chunk * ranks, what + ": the shard's weights and 4 AdamW "
          "temporaries, 5 x " + num(shard) + " x 4 B" + flight};
}

// The optimizer step's transients: ZeRO-1's shard buffers, or AdamW's per-tensor temporaries and the buckets.
std::vector<Term> step_terms(const Sizes& z) {
  std::vector<Term> t;
  if (z.lora && (z.zero1 || z.zero3)) {  // ZeRO-1 over the adapters (ZeRO-3 too: the base takes no step)
    t.push_back(zero1_step(std::ceil(z.Na / static_cast<double>(z.W)), z.W, "the adapters", z.mb, z.offload));
    return t;
  }
  if (z.zero3) {
    const double unit = std::max(z.Nl, z.N0) / static_cast<double>(z.W);
    const double step8 = std::min(unit, static_cast<double>(parallel::kStepChunk));
    if (z.offload)
      t.push_back({"ZeRO-3 step temporaries", 4 * unit + z.N0 * z.b, "the largest unit's shard (" + num(unit) +
                   ") x 4 B (its scaled gradient; stepped on the host: distributed.optimizer_offload), and the whole "
                   "embedding and head gathered anew"});
    else if (z.mb < 8)
      t.push_back({"ZeRO-3 step temporaries", 4 * unit + 40 * step8 + z.N0 * z.b, "the largest unit's shard (" +
                   num(unit) + ") x 4 B (its scaled gradient), the 8-bit step's 10 x 4 B over " + num(step8) +
                   " elements, and the whole embedding and head gathered anew"});
    else
      t.push_back({"ZeRO-3 step temporaries", 24 * unit + z.N0 * z.b, "6 x the largest unit's shard (" + num(unit) +
                   ") x 4 B, and the whole embedding and head gathered anew"});
    return t;
  }
  if (z.E > 1) {  // the rest over the world, then the kept experts over their replicas: one after the other
    const auto dense = zero1_step(std::ceil((z.N - z.Ne) / z.W), z.W, "outside the experts", z.mb, z.offload);
    const auto experts = zero1_step(std::ceil(z.Ne / z.E / z.R), z.R, "the kept experts", z.mb, z.offload);
    t.push_back(dense.bytes >= experts.bytes ? dense : experts);
    return t;
  }
  if (z.zero1) {
    t.push_back(zero1_step(z.shard, z.W, "every parameter", z.mb, z.offload));
    return t;
  }
  const double big = z.lora ? z.Na_largest : static_cast<double>(z.shape.largest_parameter());
  const double chunk = std::min(big, static_cast<double>(parallel::kStepChunk));  // 8-bit: a chunk at a time
  t.push_back(z.mb < 8 ? Term{"8-bit AdamW chunk", 40 * chunk, "10 x 4 B over " + num(chunk) + " elements"}
                       : Term{"AdamW temporaries", 8 * big, "2 x the largest tensor (" + num(big) + ") x 4 B"});
  if (z.W > 1)
    t.push_back({"all-reduce buckets", 2 * z.cfg.distributed.bucket_mb * kMiB,
                 "2 x distributed.bucket_mb " + num(z.cfg.distributed.bucket_mb)});
  return t;
}

// distributed.optimizer_offload: the host step's staging and temporaries, and what a step moves each way.
void add_offload(const Sizes& z, MemoryPlan& p) {
  // elements this rank's optimizer steps: its shard (adapters: theirs; expert parallelism: z.shard counts both sets)
  const double S = z.lora ? std::ceil(z.Na / static_cast<double>(z.W)) : z.shard;
  const double c = std::min(S, static_cast<double>(parallel::kStepChunk));
  const double temps = z.mb < 8 ? 40 : 20;  // the 8-bit step's, or AdamW's 5 float32 copies, over a chunk
  p.host.push_back({"offloaded step", (9 + temps) * c, num(c) + " elements a chunk x (9 B staging: float32 "
                    "parameter and gradient, bool mask; " + num(temps) + " B of the step's temporaries)"});
  p.host_bytes = sum(p.host);
  const bool masters = z.zero3 && !z.lora;  // ZeRO-3's masters on the host: no parameter crosses in the step
  p.d2h_bytes = (masters ? 5 : 9) * S;      // per step: each shard element's gradient and mask (and parameter)
  p.h2d_bytes = masters ? 0 : 4 * S;        // and its new parameter back
  std::string more;
  if (masters)
    more = "; every layer gather copies its master shard to the device in model.dtype (" + z.bs + " B a shard "
           "element a gather) instead";
  p.notes.push_back("distributed.optimizer_offload: " + mib(p.host_bytes) + " of host memory a rank (x the ranks of "
                    "a node, checked at start-up against MemAvailable); a step moves " + mib(p.d2h_bytes) +
                    " device to host and " + mib(p.h2d_bytes) + " back (" + num(S) + " shard elements)" +
                    more);
}

// What the layouts gspo does not have (expert parallelism with ZeRO-3) would save, by the same formulas.
void add_not_built(const Sizes& z, MemoryPlan& p) {
  const double b = z.b;
  const std::string W = std::to_string(z.W);
  if (z.shape.moe_layers.empty()) return;
  if (z.E > 1) return;  // built: training, the rollout's exchange
  const double expert = static_cast<double>(z.shape.moe_layers.size()) * z.shape.num_experts * 3 *
                        z.shape.hidden_size * z.shape.moe_intermediate_size;
  if (z.zero3)  // the state is sharded already; the rollout's whole copy of the experts is what remains
    p.not_built.push_back({"expert parallelism with ZeRO-3 over " + W + " ranks (not available)",
                           expert * b * (1 - 1.0 / z.W), "saves in the rollout: " + num(expert) + " expert params x " +
                           z.bs + " B x (1 - 1/" + W + ") of the gathered copy (the sampler would run experts on "
                           "their owners)"});
  // (without ZeRO-3, distributed.expert_parallel is built: plan_memory notes its peak)
}

// ZeRO-3's start-up: every rank reads the whole float32 model into host memory and cuts it unit by unit (unit 0,
// then each decoder layer), each unit's whole parameters freed (unit 0: cast) once its shard is out; the peak is the
// largest sum of what is still whole and the shards so far.
Term load_term(const Sizes& z) {
  const double L = static_cast<double>(z.shape.num_layers), layer = (z.N - z.N0) / L;
  double whole = 4 * z.N, shards = 0, peak = 0;
  for (int64_t k = 0; k <= z.shape.num_layers; ++k) {
    const double unit = k == 0 ? z.N0 : layer;
    shards += 16 * std::ceil(unit / z.W);
    peak = std::max(peak, whole + shards);
    whole -= (4 - (k == 0 ? z.b : 0)) * unit;
  }
  return {"whole float32 model, cut into shards", peak, num(z.N) + " x 4 B as read, replaced unit by unit by 16 B / " +
          std::to_string(z.W) + " a parameter of shards (the largest sum over the units)"};
}

// The phases of a training rank: rollout (weight sync beside rollout ranks), logprobs, the update and, with ZeRO-3,
// the start-up's load on the host.
void add_phases(const Sizes& z, const config::Config& cfg, const PlanInputs& in, bool async, MemoryPlan& p) {
  if (async)
    p.phases.push_back(phase("weight sync", weight_sync_terms(z), p.resident_bytes));
  else
    p.phases.push_back(phase("rollout", rollout_terms(z, p.rows_per_rank, p.kv_rows), p.resident_bytes));
  p.phases.push_back(phase("logprobs", logprobs_terms(z), p.resident_bytes));
  if (in.teacher)  // (after each micro-batch's old log-probs, on its own)
    p.phases.push_back(phase("teacher", teacher_pass_terms(cfg, in, z.Tu, z.head_tokens, z.head_what),
                             p.resident_bytes));
  // The update's peak: the backward of one micro-batch, or the optimizer step, whichever is larger.
  const auto backward = backward_terms(z);
  const auto step = step_terms(z);
  const bool step_wins = sum(step) > sum(backward);
  p.phases.push_back(phase("update", step_wins ? step : backward, p.resident_bytes));
  if (step_wins) p.notes.push_back("the update's peak is the optimizer step, not the backward");
  if (z.zero3) {  // start-up on the host: the device's memory only on the CPU
    const double runtime = in.runtime_mb * kMiB;
    auto load = phase("load", {load_term(z)}, runtime);
    load.on_resident = false;
    // model.device auto: the run's machine is taken to have CUDA (--device-gb is a GPU's memory).
    if (core::device_type(cfg.model.device, /*cuda_available=*/true, "model.device") == c10::kCPU)
      p.phases.insert(p.phases.begin(), load);
    else
      p.notes.push_back("host memory while loading: " + mib(load.peak_bytes) + " a rank (the whole float32 model "
                        "is read, then cut; the device receives only the shards)");
  }
}

// The plan's peak: the first phase with the largest peak.
void pick_peak(MemoryPlan& p) {
  for (const auto& ph : p.phases)
    if (ph.peak_bytes > p.peak_bytes) {
      p.peak_bytes = ph.peak_bytes;
      p.peak_phase = ph.name;
    }
}

// With expert parallelism: host memory while loading, and the expert exchange's traffic per MoE layer.
void add_expert_notes(const ModelShape& shape, const Sizes& z, int64_t W, MemoryPlan& p) {
  const double L = static_cast<double>(std::min<int64_t>(W, 8)), k = shape.experts_per_token;
  p.notes.push_back("host memory while loading (a node's ranks in turns, train/setup/expert_setup.h): " + mib(4 * z.N) +
                    " for the rank reading the float32 model, " + mib(4 * z.Nk) + " kept after; a node of " +
                    num(L) + " ranks at most " + mib(4 * z.N + (L - 1) * 4 * z.Nk) + " (all at once: " +
                    mib(L * 4 * z.N) + ")");
  p.notes.push_back("expert exchange per MoE layer: top-" + num(k) + " x " + num(shape.hidden_size) + " x " + z.bs +
                    " B = " + num(k * shape.hidden_size * z.b) + " B a token each way (dispatch and combine), "
                    "in the forward and again in the backward (activation checkpointing recomputes the forward's "
                    "too); " + mib(k * shape.hidden_size * z.b * z.Tm) + " a layer for the largest micro-batch");
}

// The same run with the experts shared by every rank, and with ZeRO-3, where they apply: planned for comparison.
void add_comparisons(const ModelShape& shape, const config::Config& cfg, const PlanInputs& given, const Sizes& z,
                     int64_t W, MemoryPlan& p) {
  const bool ep_fits = z.E == 1 && !z.zero3 && !z.lora && W > 1 && !shape.moe_layers.empty() &&
                       shape.num_experts % W == 0 && cfg.distributed.rollout_ranks == 0;
  const std::string f32 = z.mb < 8 ? ", 8-bit moments" : "";  // (every engine takes optimizer.state_bits)
  if (ep_fits) {
    config::Config ce = cfg;
    ce.distributed.expert_parallel = W;
    ce.distributed.zero_stage = 1;
    ce.train.chunked_head = true;
    const auto pe = plan_memory(shape, ce, given);
    p.notes.push_back("with distributed.expert_parallel " + std::to_string(W) + " (and zero_stage 1" + f32 +
                      "): peak " + mib(pe.peak_bytes) + " per rank (" + pe.peak_phase + ")");
  }
  if (W > 1 && !z.zero3 && z.E == 1) {
    config::Config c3 = cfg;
    c3.distributed.zero_stage = 3;
    c3.train.activation_checkpointing = true;
    c3.distributed.zero3_keep_whole = false;
    const auto p3 = plan_memory(shape, c3, given);
    p.notes.push_back("with distributed.zero_stage 3 (and activation checkpointing" + f32 + "): peak " +
                      mib(p3.peak_bytes) + " per rank (" + p3.peak_phase + ")");
  }
}

// What the plan assumes of the run and leaves out.
void add_assumptions(const config::Config& cfg, const Sizes& z, int64_t W, bool async, MemoryPlan& p) {
  if (async)
    p.notes.push_back("a training rank of " + std::to_string(W) + " beside " +
                      std::to_string(cfg.distributed.rollout_ranks) + " rollout rank(s): it samples nothing (no KV "
                      "cache); its rows are what it trains on");
  p.notes.push_back("prompt length " + std::to_string(z.P) + " tokens (--prompt-tokens), responses at "
                    "max_new_tokens " + std::to_string(z.S) + ": every row at full length");
  if (cfg.rollout.kv_cache_fraction > 0)
    p.notes.push_back("rollout.kv_cache_fraction sizes the cache from the memory free at run time: not modelled");
  if (!cfg.train.activation_checkpointing && !cfg.train.chunked_head)
    p.notes.push_back("train.activation_checkpointing and chunked_head off: the model's logits_from path");
}
}  // namespace

MemoryPlan plan_memory(const ModelShape& shape, const config::Config& cfg, const PlanInputs& given) {
  const auto& ro = cfg.rollout;
  PlanInputs in = given;
  in.world_size = training_ranks(cfg, given.world_size);
  const bool async = cfg.distributed.rollout_ranks > 0;
  const int64_t W = in.world_size;
  if (!train::prompts_divide(cfg, W))
    throw ConfigError("rollout.prompts_per_step (" + std::to_string(ro.prompts_per_step) +
                      ") must be a multiple of --world-size (" + std::to_string(W) + "): each rank takes whole groups");
  if (in.prompt_tokens < 1) throw ConfigError("--prompt-tokens must be >= 1");
  MemoryPlan p;
  p.shape = shape;
  p.parameters = shape.num_parameters();
  p.rows_per_rank = train::prompts_per_rank(cfg, W) * ro.group_size;
  const Sizes z = sizes_of(shape, cfg, in, p.rows_per_rank);
  p.columns = z.T;
  p.micro_rows = z.m;
  p.micro_tokens = static_cast<int64_t>(z.Tm);
  p.resident = resident_terms(z, in.runtime_mb, p.host);
  if (z.offload) add_offload(z, p);
  for (auto& t : scoring_resident_terms(cfg, in)) p.resident.push_back(std::move(t));  // scoring, validation
  for (auto& t : teacher_resident_terms(cfg, in)) p.resident.push_back(std::move(t));  // distill.teacher
  p.resident_bytes = sum(p.resident);
  if (z.lora)
    p.notes.push_back("LoRA rank " + std::to_string(cfg.model.lora_rank) + ": " + num(z.Na) + " adapter parameters (" +
                      num(std::round(1e4 * z.Na / z.N) / 100) + "% of the model) train; the base is frozen");
  add_phases(z, cfg, in, async, p);
  if (!async) {  // (beside rollout ranks those score; a trainer's validation scores between steps)
    int64_t after = 1;  // (after the rollout)
    for (auto& [name, t] : scoring_pass_terms(cfg, in))
      p.phases.insert(p.phases.begin() + after++, phase(name, {t}, p.resident_bytes));
  }
  pick_peak(p);
  if (W > 1) add_not_built(z, p);
  if (z.E > 1) add_expert_notes(shape, z, W, p);
  add_comparisons(shape, cfg, given, z, W, p);
  add_assumptions(cfg, z, W, async, p);
  return p;
}

namespace {
constexpr const char* kHostEnv = "GSPO_HOST_AVAILABLE_MB";

// GSPO_HOST_AVAILABLE_MB's MiB when set: a finite positive number, the whole value (ConfigError naming it otherwise).
std::optional<double> host_env_mib() {
  const char* v = std::getenv(kHostEnv);
  if (!v || !*v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double mb = std::strtod(v, &end);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (end == v || *end != '\0' || errno == ERANGE || !std::isfinite(mb) || mb <= 0)
    throw ConfigError(std::string(kHostEnv) + " must be a positive number of MiB, the host memory to count as "
                      "available (got '" + std::string(v).substr(0, 40) + "'); unset it to use MemAvailable");
  return mb;
}

const char* host_available_source() { return host_env_mib() ? kHostEnv : "MemAvailable"; }
}  // namespace

void check_offload_host_memory(const MemoryPlan& p, int64_t ranks_on_node, double available_bytes) {
  const double need = p.host_bytes * static_cast<double>(ranks_on_node);
  if (need <= available_bytes) return;
  throw ConfigError("distributed.optimizer_offload: the optimizer state of " + std::to_string(ranks_on_node) +
                    " rank(s) on this node needs " + mib(need) + " of host memory (" + mib(p.host_bytes) +
                    " a rank, gspo plan's host terms) but " + mib(available_bytes) + " is available (" +
                    host_available_source() + "): "
                    "use more nodes, zero_stage 3, optimizer.state_bits 8, or turn the offload off");
}

double host_available_bytes() {
  if (const auto mb = host_env_mib()) return *mb * kMiB;
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::atof(line.c_str() + 13) * 1024;  // "MemAvailable: N kB"
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace gspo::plan
