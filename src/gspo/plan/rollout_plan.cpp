// The rollout's memory terms, shared by a training rank that samples and a rollout rank, and a rollout rank's plan
// (memory.h plan_rollout_rank).
#include <cmath>

#include "gspo/core/error.h"
#include "gspo/parallel/expert_rollout.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/plan_text.h"
#include "gspo/plan/sizes.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/rank_share.h"

namespace gspo::plan {

std::vector<Term> rollout_terms(const Sizes& z, int64_t rows_per_rank, int64_t& kv_rows) {
  const auto& ro = z.cfg.rollout;
  const auto& s = z.shape;
  const double sb = ro.dtype == config::RolloutDtype::kBFloat16 ? 2 : z.b;
  const double kv_tok = static_cast<double>(s.num_layers) * 2 * s.num_kv_heads * s.head_dim * sb;
  const double row = kv_tok * z.T;
  int64_t rows = rows_per_rank;
  std::string why = std::to_string(rows) + " rows (no budget)";
  if (ro.kv_cache_mb > 0) {
    const auto budget = static_cast<int64_t>(static_cast<double>(ro.kv_cache_mb) * kMiB);
    rows = rollout::rows_in_budget(budget, static_cast<int64_t>(std::ceil(row)), rows_per_rank);
    if (rows < 1)  // as the run: Sampler::generate refuses it
      throw ConfigError("rollout.kv_cache_mb: " + std::to_string(ro.kv_cache_mb) + " MiB holds no row of KV cache: one row " +
                        "of " + std::to_string(z.T) + " columns needs " + num(row) + " B for this model");
    why = std::to_string(rows) + " rows in rollout.kv_cache_mb " + std::to_string(ro.kv_cache_mb);
  }
  kv_rows = rows;
  std::vector<Term> t;
  t.push_back({"KV cache", rows * row, why + " x " + std::to_string(z.T) + " columns x " + num(kv_tok) +
               " B (layers x 2 x KV heads x head_dim x " + num(sb) + " B)"});
  // The exported models have the slot methods: a budget that holds fewer rows than a rank samples runs the slot pool,
  // which compacts in place; every other schedule drops finished rows into a new, smaller cache.
  const auto schedule = rollout::schedule_for(rows_per_rank, rows, ro.continuous_batching, true);
  const double copy = 1.0 - 1.0 / static_cast<double>(rollout::kCompactEvery);
  if (ro.min_new_tokens < ro.max_new_tokens && schedule != rollout::Schedule::kSlotPool)
    t.push_back({"cache compaction copy", copy * rows * row, num(copy) + " x the cache: dropping finished rows copies "
                 "the live rows while the old cache lives (static batches; docs/performance.md)"});
  const double prefill_tokens = static_cast<double>(train::prompts_per_rank(z.cfg, z.W)) * z.P;
  const double widest = z.widest(layer_nograd_bytes_per_token, sb);
  t.push_back({"prefill", prefill_tokens * widest, num(prefill_tokens) + " prompt tokens x " + num(widest) +
               " B (one layer's forward without autograd)"});
  t.push_back({"decode logits", rows * static_cast<double>(s.vocab_size) * 4 * 3, std::to_string(rows) +
               " rows x vocab x 4 B x 3 (float32 logits, probabilities, sampling scratch)"});
  if (z.zero3 && !z.cfg.distributed.zero3_keep_whole)
    t.push_back({"ZeRO-3 gathered layers", (z.N - z.N0) * z.b, num(z.N - z.N0) + " x " + z.bs +
                 " B (every decoder layer gathered for the sampler, freed after)"});
  if (z.cfg.algorithm.routing_replay == config::RoutingReplay::kRollout && s.num_experts > 0) {
    int64_t moe = 0;  // rollout/route_store.h: every row's tokens' experts while the call samples
    for (int64_t l = 0; l < s.num_layers; ++l) moe += s.is_moe_layer(l);
    const double id = s.num_experts <= 256 ? 1 : 2;
    const double per_token = static_cast<double>(moe * s.experts_per_token) * id;
    t.push_back({"rollout routes (R3)", (rows_per_rank + 1.0) * z.T * per_token, std::to_string(rows_per_rank) +
                 " rows x " + std::to_string(z.T) + " columns x " + num(per_token) + " B (" + std::to_string(moe) +
                 " MoE layers x top-" + std::to_string(s.experts_per_token) + " x " + num(id) +
                 " B: algorithm.routing_replay rollout's record, kept with the batch for the update)"});
  }
  if (z.E > 1) {  // parallel/expert_rollout.h: a pass's rows of the whole group gathered, float32 sums back
    const double chunk = static_cast<double>(
        std::max<int64_t>(64, parallel::RolloutExperts::kDefaultGatherRows / z.E));
    const double m = std::min(chunk, std::max(prefill_tokens, static_cast<double>(rows)));
    const double per_row = static_cast<double>(z.shape.hidden_size) * (z.b + 4) + 4.0 * z.shape.num_experts;
    t.push_back({"rollout expert exchange", z.E * m * per_row, std::to_string(z.E) + " ranks x " + num(m) +
                 " rows (a pass's largest share, at most " + num(chunk) + " a chunk) x (hidden x (" + z.bs +
                 " + 4) + experts x 4) B: the group's rows gathered, routed, float32 sums reduce-scattered back"});
  }
  return t;
}

MemoryPlan plan_rollout_rank(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in) {
  const int64_t K = cfg.distributed.rollout_ranks;
  if (K == 0) throw ConfigError("plan_rollout_rank: distributed.rollout_ranks is 0");
  training_ranks(cfg, in.world_size);
  if (in.prompt_tokens < 1) throw ConfigError("--prompt-tokens must be >= 1");
  PlanInputs rin = in;
  rin.world_size = K;  // the rollout ranks share each batch's prompts
  MemoryPlan p;
  p.shape = shape;
  p.parameters = shape.num_parameters();
  p.rows_per_rank = train::prompts_per_rank(cfg, K) * cfg.rollout.group_size;
  Sizes z = sizes_of(shape, cfg, rin, p.rows_per_rank);
  z.zero3 = false;  // a rollout rank holds the whole policy; ZeRO is the trainers'
  p.columns = z.T;
  const double sb = cfg.rollout.dtype == config::RolloutDtype::kBFloat16 ? 2 : z.b;
  p.resident = {{"weights (rollout dtype)", z.N * sb, num(z.N) + " params x " + num(sb) + " B: no gradients, masters "
                 "or optimizer state"},
                {"weight sync bucket", cfg.distributed.bucket_mb * kMiB, "distributed.bucket_mb " +
                 num(cfg.distributed.bucket_mb) + ": new weights arrive one bucket at a time"},
                {"runtime", in.runtime_mb * kMiB, num(in.runtime_mb) + " MiB: LibTorch and the binary (measured)"}};
  for (auto& t : scoring_resident_terms(cfg, in)) p.resident.push_back(std::move(t));  // rollout ranks score
  p.resident_bytes = sum(p.resident);
  p.phases.push_back(phase("rollout", rollout_terms(z, p.rows_per_rank, p.kv_rows), p.resident_bytes));
  for (auto& [name, t] : scoring_pass_terms(cfg, in)) p.phases.push_back(phase(name, {t}, p.resident_bytes));
  for (const auto& ph : p.phases)  // the first phase with the largest peak
    if (ph.peak_bytes > p.peak_bytes) p.peak_bytes = ph.peak_bytes, p.peak_phase = ph.name;
  p.notes.push_back(std::to_string(K) + " rollout rank(s) share each batch: " + std::to_string(p.rows_per_rank) +
                    " rows each; with async.max_staleness S they sample up to S batches ahead, one at a time");
  return p;
}

}  // namespace gspo::plan
