// The sizes a memory plan is computed from (sizes.h).
#include "gspo/plan/sizes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gspo/core/error.h"
#include "gspo/plan/plan_text.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/shared_prefix.h"

namespace gspo::plan {
namespace {

// The largest micro-batch: the trainer's own split (train/minibatch.h) of this rank's rows in its largest
// mini-batch, every response max_new_tokens long. The trainer cuts the global rows into mini-batches and each rank
// keeps its own; this rank's rows cut alike are its share on average. `group` > 0 (train.shared_prefix with
// algorithm.minibatch_groups): mini-batches of whole groups, each micro-batch's groups packed as the step packs them
// (train/shared_prefix.h: share_groups), the part with the most packed tokens.
struct LargestMicro {
  int64_t rows = 0;     // rows of the part with the most rows
  double tokens = 0;    // shared: packs x width of the widest-packed part (else 0)
  double mask = 0;      // shared: its tree mask, packs x width^2 bytes
};

LargestMicro largest_micro(int64_t rows_per_rank, int64_t prompt_len, int64_t response_len,
                           const config::AlgorithmOptions& al, int64_t group) {
  const int64_t n = group > 0 ? train::minibatch_sizes(rows_per_rank / group, al.num_minibatches).front() * group
                              : train::minibatch_sizes(rows_per_rank, al.num_minibatches).front();
  std::vector<int64_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  const std::vector<int64_t> lengths(rows.size(), response_len);
  LargestMicro m;
  for (const auto& part : train::plan_micro(rows, lengths, prompt_len, al.micro_batch_size, al.micro_batch_tokens,
                                            group)) {
    m.rows = std::max(m.rows, static_cast<int64_t>(part.size()));
    if (group <= 0) continue;
    const auto tokens = static_cast<double>(train::shared_padded_tokens(part, lengths, prompt_len, group));
    if (tokens <= m.tokens) continue;
    std::vector<int64_t> ids, plen(part.size(), prompt_len), rlen(part.size(), std::max<int64_t>(1, response_len));
    for (int64_t r : part) ids.push_back(r / group);
    const auto packs = train::share_groups(ids, plen, rlen);
    const double count = static_cast<double>(*std::max_element(packs.begin(), packs.end()) + 1);
    m.tokens = tokens;
    m.mask = count * (tokens / count) * (tokens / count);
  }
  return m;
}

}  // namespace

Sizes sizes_of(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in, int64_t rows_per_rank) {
  const auto& al = cfg.algorithm;
  const auto& tr = cfg.train;
  Sizes z{shape, cfg};
  z.W = in.world_size;
  z.N = static_cast<double>(shape.num_parameters());
  z.bf16 = cfg.model.dtype == config::Dtype::kBFloat16;
  z.b = z.bf16 ? 2 : 4;
  z.bs = z.bf16 ? "2" : "4";
  z.engine = train::choose_engine(cfg);
  z.mb = z.engine.moment_bytes();
  z.zero1 = cfg.distributed.zero_stage == 1;
  z.zero3 = cfg.distributed.zero_stage == 3;
  z.offload = z.engine.offload;
  // the sharded engines' shard (parallel/shard_layout.h): 8 bits round it up to whole 256-element blocks
  const int64_t align = z.engine.shard_align();
  z.shard = z.zero1 || z.zero3 ? static_cast<double>(ceil_div(shape.num_parameters(), z.W * align) * align) : z.N;
  z.N0 = z.N;
  for (int64_t l = 0; l < shape.num_layers; ++l) {
    const auto n = static_cast<double>(shape.layer_parameters(l));
    z.N0 -= n;
    z.Nl = std::max(z.Nl, n);
  }
  const auto& sh = shape;
  z.Ne = static_cast<double>(sh.moe_layers.size()) * sh.num_experts * 3 * sh.hidden_size * sh.moe_intermediate_size;
  z.E = cfg.distributed.expert_parallel;
  if (z.E > 1) {
    if (sh.moe_layers.empty())
      throw ConfigError("distributed.expert_parallel " + std::to_string(z.E) + ": the model is dense (no MoE layer)");
    if (z.W % z.E != 0 || sh.num_experts % z.E != 0)
      throw ConfigError("distributed.expert_parallel " + std::to_string(z.E) + " must divide --world-size (" +
                        std::to_string(z.W) + ") and the experts of a layer (" + std::to_string(sh.num_experts) + ")");
    z.R = z.W / z.E;
    z.shard = std::ceil((z.N - z.Ne) / z.W) + std::ceil(z.Ne / z.E / z.R);
  }
  z.Nk = z.N - z.Ne + z.Ne / z.E;
  z.Nle = static_cast<double>(sh.num_experts / z.E) * 3 * sh.hidden_size * sh.moe_intermediate_size;
  z.lora = cfg.model.lora_rank > 0;
  if (z.lora) {
    const auto c = lora_count(shape, cfg.model);
    z.Na = c.adapters;
    z.Nt = c.widest_layer_targets;
    z.Na_largest = c.largest_tensor;
    z.Nta = c.targets;
  }
  z.P = in.prompt_tokens;
  z.S = cfg.rollout.max_new_tokens;
  z.T = z.P + z.S;
  const bool shared = tr.shared_prefix && al.minibatch_groups;
  const auto micro = largest_micro(rows_per_rank, z.P, z.S, al, shared ? cfg.rollout.group_size : 0);
  z.m = micro.rows;
  z.Tu = static_cast<double>(z.m * z.T);
  z.Tm = shared ? micro.tokens : z.Tu;
  z.mask = shared ? micro.mask : 0;
  z.chunked = tr.chunked_head && tr.logprob_chunk_tokens > 0;
  const double response = static_cast<double>(z.m * z.S);
  z.head_tokens = z.chunked ? std::min<double>(tr.logprob_chunk_tokens, response) : response;
  z.head_what = z.chunked ? "chunk of " + num(z.head_tokens) + " tokens (train.logprob_chunk_tokens)"
                          : "whole head: " + std::to_string(z.m) + " rows x " + std::to_string(z.S) + " response tokens";
  return z;
}

int64_t training_ranks(const config::Config& cfg, int64_t W) {
  if (W < 1) throw ConfigError("--world-size must be >= 1 (got " + std::to_string(W) + ")");
  if (cfg.distributed.rollout_ranks == 0) return W;
  train::check_world_size(cfg, W);
  return W - cfg.distributed.rollout_ranks;
}

PhasePlan phase(const std::string& name, std::vector<Term> terms, double resident) {
  PhasePlan ph{name, std::move(terms), 0};
  ph.peak_bytes = resident + sum(ph.terms);
  return ph;
}

}  // namespace gspo::plan
