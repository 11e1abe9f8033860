// Checkpoints: RUN/checkpoints/step_NNNNNNNN/ with policy.pt (TorchScript, loadable by generate and inspect) or,
// training low-rank adapters, adapter.pt + adapter.json in its place (io/adapter_file.h: the base is not copied),
// the optimizer state (optimizer.pt for torch AdamW, optimizer_zero1.pt for the sharded one, gathered), rng.pt,
// state.json and config.yaml. Written into a temporary directory, then renamed, so a
// crash mid-write never damages an existing checkpoint; the newest `keep_last` are kept.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
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

// Writes files into the (temporary) checkpoint directory it is given.
using OptimizerWriter = std::function<void(const std::string& dir)>;
using ModelWriter = std::function<void(const std::string& dir)>;

// Returns the checkpoint directory written. `write_model` writes policy.pt (or the adapters), `write_optimizer` the
// optimizer's and the run's other files; state.json is written last.
std::string save_checkpoint(const std::string& run_dir, const CheckpointMeta& meta, const ModelWriter& write_model,
                            const OptimizerWriter& write_optimizer, const std::vector<at::Tensor>& rng_states,
                            const std::string& config_yaml, int64_t keep_last);

// Removes what an earlier run provably left half-done under RUN/checkpoints: temporary directories of processes
// that no longer exist (.tmp-step_N-PID, after a kill) and step_N directories without state.json (never complete,
// or an interrupted prune). Returns the paths removed. Called once by rank 0 at start-up.
std::vector<std::string> remove_leftovers(const std::string& run_dir);

// The newest complete checkpoint under RUN/checkpoints, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);
// Every complete checkpoint (state.json present) under RUN/checkpoints, newest first.
std::vector<std::string> complete_checkpoints_newest_first(const std::string& run_dir);

// Read by read_meta: the counters must be non-negative integers (IoError naming the key otherwise).

CheckpointMeta read_meta(const std::string& ckpt_dir);
void save_optimizer(const std::string& ckpt_dir, torch::optim::Optimizer& optimizer);  // optimizer.pt
void load_optimizer(const std::string& ckpt_dir, torch::optim::Optimizer& optimizer);
// A list of tensors in one file (torch::save format); `what` names it in errors.
void save_tensors(const std::string& path, const std::vector<at::Tensor>& tensors, const std::string& what);
std::vector<at::Tensor> load_tensors(const std::string& path, const std::string& what);
std::vector<at::Tensor> load_rng(const std::string& ckpt_dir);
inline std::string policy_file(const std::string& ckpt_dir) { return ckpt_dir + "/policy.pt"; }
inline std::string adapter_file(const std::string& ckpt_dir) { return ckpt_dir + "/adapter.pt"; }

}  // namespace gspo::io
