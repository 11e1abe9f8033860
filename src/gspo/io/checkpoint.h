// Checkpoints: RUN/checkpoints/step_NNNNNNNN/ with policy.pt (TorchScript, loadable by generate and inspect),
// optimizer.pt, rng.pt, state.json and config.yaml. Written into a temporary directory, then renamed, so a
// crash mid-write never damages an existing checkpoint; the newest `keep_last` are kept.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gspo::model { class Policy; }
namespace torch::optim { class Optimizer; }

namespace gspo::io {

struct CheckpointMeta {
  int64_t step = 0;             // rollout steps completed
  int64_t optimizer_steps = 0;  // optimizer steps taken (drives the LR schedule)
  int64_t data_epoch = 0;       // data cursor
  int64_t data_position = 0;
};

// Returns the checkpoint directory written.
std::string save_checkpoint(const std::string& run_dir, const CheckpointMeta& meta, const model::Policy& policy,
                            torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& rng_states,
                            const std::string& config_yaml, int64_t keep_last);

// The newest complete checkpoint under RUN/checkpoints, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

CheckpointMeta read_meta(const std::string& ckpt_dir);
void load_optimizer(const std::string& ckpt_dir, torch::optim::Optimizer& optimizer);
std::vector<at::Tensor> load_rng(const std::string& ckpt_dir);
inline std::string policy_file(const std::string& ckpt_dir) { return ckpt_dir + "/policy.pt"; }

}  // namespace gspo::io
