#include "gspo/train/checkpointing.h"

#include <torch/torch.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/log.h"
#include "gspo/parallel/comm.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/checkpoint_check.h"
#include "gspo/model/policy.h"
#include "gspo/train/step.h"
#include "gspo/train/engines/update_engine.h"

namespace gspo::train {

namespace {

// A checkpoint of adapters resumes only with adapters, a whole policy only without (ConfigError naming the setting).
std::optional<std::string> same_kind(const config::Config& cfg, std::optional<std::string> ckpt) {
  if (!ckpt) return ckpt;
  const bool has_adapters = core::exists(io::adapter_file(*ckpt));
  if (has_adapters != (cfg.model.lora_rank > 0))
    throw ConfigError("checkpoint '" + *ckpt + "' holds " + (has_adapters ? "low-rank adapters" : "a whole policy") +
                      ": resume it with " + (has_adapters ? "model.lora_rank as trained (" +
                      std::to_string(io::read_adapter_meta(*ckpt).rank) + ")" : "model.lora_rank 0 (full fine-tuning)"));
  return ckpt;
}

std::optional<std::string> find_checkpoint(const config::Config& cfg, const std::string& resume) {
  const std::string& dir = cfg.train.output_dir;
  if (resume.empty()) {
    // A run that failed before its first metrics line (an empty metrics.jsonl, no checkpoint) holds nothing to keep.
    if (io::latest_checkpoint(dir) || core::non_empty_file(dir + "/metrics.jsonl"))
      throw ConfigError("train.output_dir '" + dir + "' already holds a run (metrics.jsonl or checkpoints); pass "
                        "--resume auto to continue it, or choose another train.output_dir");
    return std::nullopt;
  }
  if (resume == "auto") {
    // Every byte of the newest checkpoint is read back first; damaged ones are passed over (and kept) so a torn or
    // corrupt newest checkpoint costs the steps since the previous one, not the run.
    auto found = io::latest_intact_checkpoint(dir);
    for (const auto& [bad, why] : found.damaged)
      log::warn("--resume auto: checkpoint {} is damaged ({}); it is left in place and an older one is used", bad, why);
    if (!found.dir && !found.damaged.empty())
      throw IoError("--resume auto: every checkpoint under '" + dir + "/checkpoints' is damaged; the newest: " +
                    found.damaged.front().second);
    if (found.dir && !found.damaged.empty()) log::warn("--resume auto: resuming from {}, the newest intact checkpoint", *found.dir);
    return found.dir;
  }
  if (!core::exists(resume + "/state.json"))
    throw IoError("--resume '" + resume + "' is not a checkpoint directory (no state.json)");
  return resume;
}

}  // namespace

std::optional<std::string> find_resume_point(const config::Config& cfg, const std::string& resume) {
  return same_kind(cfg, find_checkpoint(cfg, resume));
}

std::vector<int64_t> restore(const std::string& ckpt, UpdateEngine& engine, Progress& progress,
                             const std::string& config_yaml, const AdapterState& adapters) {
  auto meta = io::read_meta(ckpt);
  if (adapters.lora) {  // (find_resume_point checked that the checkpoint holds adapters)
    io::check_adapter_base(ckpt, io::read_adapter_meta(ckpt), adapters.meta.base_path, adapters.meta.base_fingerprint);
    io::load_adapters(ckpt, *adapters.lora);
  }
  engine.load(ckpt);
  auto rng = io::load_rng(ckpt);
  if (rng.empty()) throw IoError("checkpoint '" + ckpt + "' has a damaged rng.pt");
  progress.shuffle_gen.set_state(rng.back());  // checkpoints before counter-based sampling noise also held a sampler state
  progress.cursor.restore(meta.data_epoch, meta.data_position);
  progress.step = meta.step;
  progress.optimizer_steps = meta.optimizer_steps;
  const std::string saved = core::read_text(ckpt + "/config.yaml");
  if (saved != config_yaml) {
    std::string keys;
    for (const auto& k : config::differing_keys(saved, config_yaml)) {
      // The experts a step's passes run through: a run that changes them mid-way compares log-probs of other
      // sub-networks than it trained with (R3's routes come from its own rollouts; R2's from its old pass).
      if (k.rfind("algorithm.routing_replay:", 0) == 0)
        throw ConfigError("checkpoint '" + ckpt + "' was trained with another algorithm.routing_replay (" +
                          k.substr(k.find(':') + 2) + "): resume with the mode it was trained with, or start a new "
                          "run (train.output_dir) from its weights (model.path: " + ckpt + "/policy.pt)");
      keys += "\n  " + k;
    }
    log::warn("the config differs from the one checkpoint {} was trained with:{}", ckpt, keys);
  }
  log::info("resumed from {} (step {}, optimizer step {})", ckpt, meta.step, meta.optimizer_steps);
  std::vector<int64_t> carried;
  const std::string file = ckpt + "/carried.json";
  if (core::exists(file)) {
    try {
      carried = nlohmann::json::parse(core::read_text(file)).at("examples").get<std::vector<int64_t>>();
    } catch (const nlohmann::json::exception& e) {
      throw IoError("checkpoint '" + ckpt + "' has a damaged carried.json: " + e.what());
    }
  }
  return carried;
}

namespace {

// Where sharded engines stage their per-rank files before rank 0 moves them into the checkpoint: a .tmp- directory
// carrying rank 0's process id, so io::remove_leftovers clears it after a crash like rank 0's own temporary one.
std::string shard_staging(const std::string& run_dir, int64_t step, parallel::Comm& comm) {
  auto pid = torch::tensor({static_cast<int64_t>(::getpid())}, torch::kLong);
  comm.broadcast(pid, 0);
  return run_dir + "/checkpoints/.tmp-shards-step_" + std::to_string(step) + "-" + std::to_string(pid.item<int64_t>());
}

}  // namespace

std::string save_checkpoint(const config::Config& cfg, const std::string& config_yaml, model::Policy& policy,
                            UpdateEngine& engine, Progress& progress, parallel::Comm& comm,
                            const std::vector<int64_t>& carried, const AdapterState& adapters) {
  if (!engine.weights_finite())
    throw TrainingError("step " + std::to_string(progress.step) + ": the policy has non-finite weights; refusing "
                        "to write a checkpoint (the previous one is intact)");
  engine.gather_for_save(shard_staging(cfg.train.output_dir, progress.step, comm));
  std::string dir;
  if (comm.is_main()) {
    const io::CheckpointMeta meta{progress.step, progress.optimizer_steps, progress.cursor.epoch(),
                                  progress.cursor.position()};
    engine.with_float32_policy([&] {
      auto model = [&](const std::string& d) {
        if (adapters.lora) io::save_adapters(d, *adapters.lora, adapters.meta);
        else policy.save(io::policy_file(d));
      };
      auto extra = [&](const std::string& d) {
        engine.save(d);
        if (!carried.empty()) core::atomic_write(d + "/carried.json", nlohmann::json{{"examples", carried}}.dump() + "\n");
      };
      dir = io::save_checkpoint(cfg.train.output_dir, meta, model, extra,
                                {progress.shuffle_gen.get_state()}, config_yaml, cfg.checkpoint.keep_last);
    });
  }
  comm.barrier("checkpoint of step " + std::to_string(progress.step));
  return dir;
}

}  // namespace gspo::train
