#include "gspo/rollout/sampling_config.h"

namespace gspo::rollout {

SamplingParams sampling_params(const config::Config& cfg) {
  const auto& r = cfg.rollout;
  SamplingParams sp{r.temperature, r.top_p, r.top_k, r.max_new_tokens, r.stop};
  sp.min_new_tokens = r.min_new_tokens;
  sp.cuda_graphs = r.cuda_graphs;
  sp.kv_cache_bytes = r.kv_cache_mb << 20;
  sp.kv_cache_fraction = r.kv_cache_fraction;
  sp.continuous = r.continuous_batching;
  return sp;
}

c10::ScalarType sampling_dtype(const config::Config& cfg) {
  return cfg.rollout.dtype == config::RolloutDtype::kBFloat16 || cfg.model.dtype == config::Dtype::kBFloat16
             ? c10::kBFloat16
             : c10::kFloat;
}

}  // namespace gspo::rollout
