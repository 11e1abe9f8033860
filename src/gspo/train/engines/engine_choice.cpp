#include "gspo/train/engines/engine_choice.h"

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/model/lora.h"
#include "gspo/parallel/adamw8bit.h"
#include "gspo/train/engines/update_engine.h"
#include "gspo/train/engines/zero3_engine.h"

namespace gspo::train {

double EngineChoice::moment_bytes() const { return state_bits == 8 ? 2 + 8.0 / parallel::kQuantBlock : 8; }

int64_t EngineChoice::shard_align() const { return state_bits == 8 ? parallel::kQuantBlock : 1; }

std::string EngineChoice::describe() const {
  static const char* names[] = {"replicated AdamW", "ZeRO-1", "ZeRO-3", "ZeRO-3 with adapters", "expert parallel"};
  std::string s = names[static_cast<int>(kind)];
  if (adapters && kind != EngineKind::kZero3Adapters) s += " with adapters";
  s += state_bits == 8 ? ", 8-bit moments" : ", float32 moments";
  if (offload) s += " offloaded";
  if (bf16) s += ", bf16 weights with float32 masters";
  return s;
}

EngineChoice choose_engine(int64_t zero_stage, bool adapters, bool experts, bool offload, int64_t state_bits,
                           config::Dtype dtype) {
  if (state_bits != 8 && state_bits != 32)
    throw ConfigError("optimizer.state_bits must be 8 or 32 (got " + std::to_string(state_bits) + ")");
  EngineChoice c;
  c.adapters = adapters;
  c.bf16 = dtype == config::Dtype::kBFloat16;
  c.state_bits = state_bits;
  c.offload = offload;
  if (zero_stage == 3 && adapters) c.kind = EngineKind::kZero3Adapters;
  else if (experts) c.kind = EngineKind::kExpertParallel;
  else if (zero_stage == 3) c.kind = EngineKind::kZero3;
  else if (zero_stage == 1) c.kind = EngineKind::kZero1;
  if (const auto why = config::offload_refusal(offload, zero_stage); !why.empty()) throw ConfigError(why);
  return c;
}

EngineChoice choose_engine(const config::Config& cfg) {
  const auto& d = cfg.distributed;
  auto c = choose_engine(d.zero_stage, cfg.model.lora_rank > 0, d.expert_parallel > 1, d.optimizer_offload,
                         cfg.optimizer.state_bits, cfg.model.dtype);
  c.expert_parallel = d.expert_parallel;
  return c;
}

// The engine EngineOptions describe (update_engine.h; defined here, beside the choice, so that the interface's own
// file includes none of the engines that implement it).
std::unique_ptr<UpdateEngine> make_update_engine(model::Policy& policy, const EngineOptions& opts, parallel::Comm& comm) {
  const auto choice = choose_engine(opts.zero_stage, opts.lora != nullptr, opts.experts != nullptr, opts.offload,
                                    opts.optimizer.state_bits, opts.dtype);
  switch (choice.kind) {
    case EngineKind::kZero3Adapters:
      opts.lora->move_to(opts.device);  // the policy came on the host, to be cut: its adapters with it
      // first: the adapters' engine casts the whole base (bf16) on the host, which Zero3 then cuts
      return make_zero3_lora_engine(policy, opts, comm, make_zero1_engine(policy, opts, comm));
    case EngineKind::kExpertParallel: return make_expert_parallel_engine(policy, opts, comm);
    case EngineKind::kZero3: return make_zero3_engine(policy, opts, comm);
    case EngineKind::kZero1: return make_zero1_engine(policy, opts, comm);
    case EngineKind::kReplicated: break;
  }
  return make_replicated_engine(policy, opts, comm);
}

}  // namespace gspo::train
