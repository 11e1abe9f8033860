#include "gspo/train/assembly.h"

#include <torch/torch.h>

#include "gspo/env/episode.h"
#include "gspo/model/lora.h"
#include "gspo/reward/competition.h"
#include "gspo/reward/verifier.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/sources/partial_source.h"
#include "gspo/train/sources/training_data.h"

namespace gspo::train {

Assembly::Assembly() = default;
Assembly::~Assembly() = default;

std::vector<data::Example> Assembly::load_rows(const config::Config& cfg, c10::Device device) {
  if (cfg.train.threads > 0) torch::set_num_threads(static_cast<int>(cfg.train.threads));
  auto rows = data::load_dataset(cfg.data);
  reward::check_competition_rows(rows);  // a competition row's limits and checker: refused before any sampling
  verifier = reward::make_verifier(cfg, rows, device);
  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  return rows;
}

void Assembly::add_adapters(const config::Config& cfg) {
  lora = std::make_unique<model::LoraAdapters>(*policy, model::lora_spec(cfg.model, static_cast<uint64_t>(cfg.train.seed)));
}

void Assembly::make_tokenizer(const config::Config& cfg) {
  tok = tokenizer::from_path_or_spec(cfg.tokenizer.path, policy->tokenizer_json(), cfg.model.path);
}

void Assembly::fit_rows(std::vector<data::Example> rows, const config::Config& cfg, bool loud, int64_t& dropped) {
  examples = fit_training_rows(std::move(rows), cfg, *tok, *policy, loud, dropped);
}

int64_t Assembly::merged_copy(const config::Config& cfg, c10::Device device) {
  sampling_copy.emplace(*policy, model::load_frozen(cfg.model.path, c10::kCPU, rollout::sampling_dtype(cfg)), lora.get());
  auto& copy = sampling_copy->model();
  const int64_t shared = lora->share_untargeted(copy);
  copy.move_to(device);
  return shared;
}

void Assembly::make_sampler(const config::Config& cfg, bool progress) {
  auto sp = rollout::sampling_params(cfg);
  sp.progress = progress;
  sampler = std::make_unique<rollout::Sampler>(sampling_model(), *tok, sp);
  tools = env::make_tool_env(cfg, *tok, sampling_model());
}

std::unique_ptr<RolloutSource> Assembly::local_source(const config::Config& cfg, parallel::Comm& comm) {
  SamplingCopy* copy = sampling_copy ? &*sampling_copy : nullptr;
  if (cfg.async.partial_rollout)
    return std::make_unique<PartialSource>(cfg, *policy, copy, *tok, examples, *verifier, *sampler, comm);
  return std::make_unique<InProcessSource>(cfg, *policy, copy, *tok, examples, *verifier, *sampler, comm, tools.get());
}

}  // namespace gspo::train
