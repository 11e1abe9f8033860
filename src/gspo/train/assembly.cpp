#include "gspo/train/assembly.h"

#include <torch/torch.h>

#include "gspo/config/validate.h"
#include "gspo/env/episode.h"
#include "gspo/model/lora.h"
#include "gspo/reward/code/competition.h"
#include "gspo/reward/factory.h"
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

void Assembly::take(io::LoadedModel loaded) {
  policy = std::move(loaded.policy);
  lora = std::move(loaded.lora);
  tok = std::move(loaded.tok);
}

io::ModelLoad Assembly::model_load(const config::Config& cfg, c10::Device device, bool start) {
  io::ModelLoad what;
  what.file = cfg.model.path;
  what.device = device;
  what.tokenizer_path = cfg.tokenizer.path;
  const std::string from = start ? cfg.model.adapter : "";
  if (cfg.model.lora_rank > 0) {
    what.lora = model::lora_spec(cfg.model, static_cast<uint64_t>(cfg.train.seed));
    what.lora_start = from;
    what.alpha_key = config::set_at(cfg, "model.lora_alpha") + "model.lora_alpha";
  } else {
    what.merge = from;
  }
  return what;
}

void Assembly::fit_rows(std::vector<data::Example> rows, const config::Config& cfg, bool loud, int64_t& dropped) {
  examples = fit_training_rows(std::move(rows), cfg, *tok, *policy, loud, dropped);
}

int64_t Assembly::merged_copy(const config::Config& cfg, c10::Device device) {
  io::ModelLoad what;  // a copy of the checked base, on the host in the sampling dtype
  what.file = cfg.model.path;
  what.frozen = true;
  what.dtype = rollout::sampling_dtype(cfg);
  what.check_contract = what.tokenizer = false;
  sampling_copy.emplace(*policy, std::move(*io::load_model(what).policy), lora.get());
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
