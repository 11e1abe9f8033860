// Which update engine a config gets, as one value (#68 item 3): make_update_engine builds the engine it names and
// `gspo plan` sizes the same engine from it, so the two cannot disagree on which engine runs, what its moments weigh
// or how a shard is rounded.
#pragma once
#include <cstdint>
#include <string>

#include "gspo/config/options.h"

namespace gspo::train {

enum class EngineKind {
  kReplicated,      // every rank holds the whole optimizer state; gradients all-reduced in buckets
  kZero1,           // AdamW moments sharded over the ranks (parallel/sharded_adamw.h)
  kZero3,           // weights, masters, gradients and moments sharded per decoder layer (parallel/zero3.h)
  kZero3Adapters,   // ZeRO-3's frozen base with low-rank adapters stepped by ZeRO-1 (make_zero3_lora_engine)
  kExpertParallel,  // ZeRO-1 over the world for the rest, over the replicas for this rank's experts
};

struct EngineChoice {
  EngineKind kind = EngineKind::kReplicated;
  bool adapters = false;       // model.lora_rank > 0: the optimizer steps the adapters, the base is frozen
  bool bf16 = false;           // model.dtype bfloat16: bf16 weights, float32 masters (of what is trained)
  int64_t state_bits = 32;     // optimizer.state_bits: 32, or 8 (8-bit codes and an absmax per block)
  bool offload = false;        // distributed.optimizer_offload: moments (ZeRO-3: and master shards) in host memory
  int64_t expert_parallel = 1;  // distributed.expert_parallel

  // The moments are sharded over ranks (every engine but the replicated one).
  bool sharded() const { return kind != EngineKind::kReplicated; }
  // Bytes of AdamW moments a parameter: 8 (float32 exp_avg and exp_avg_sq), or 2 one-byte codes plus a float32
  // absmax per parallel::kQuantBlock elements.
  double moment_bytes() const;
  // Elements a rank's shard of the flat parameters is rounded up to a multiple of: whole 8-bit blocks, else 1.
  int64_t shard_align() const;
  // "ZeRO-3 with adapters, 8-bit moments offloaded" (gspo plan's header).
  std::string describe() const;
};

// The engine for these settings. ConfigError (naming the key) for distributed.optimizer_offload without sharded
// moments, and for optimizer.state_bits other than 8 or 32.
EngineChoice choose_engine(int64_t zero_stage, bool adapters, bool experts, bool offload, int64_t state_bits,
                           config::Dtype dtype);
EngineChoice choose_engine(const config::Config& cfg);

}  // namespace gspo::train
