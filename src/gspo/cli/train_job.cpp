#include "gspo/cli/train_job.h"

#include <cstdlib>

#include "gspo/core/device.h"
#include "gspo/parallel/comm.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/model_shape.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/rollout_worker.h"

namespace gspo::cli {

c10::Device train_device(const config::Config& c, const parallel::LaunchEnv& env) {
  auto d = core::resolve_device(c.model.device, "model.device");
  if (d.is_cuda() && env.world_size > 1 && (c.model.device == "cuda" || c.model.device == "auto"))
    d = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  return d;
}

namespace {

// Ranks sharing this node's host memory: LOCAL_WORLD_SIZE (torchrun), SLURM_NTASKS_PER_NODE, else every rank (a
// single-host launch such as scripts/launch_local.sh).
int64_t ranks_on_node(const parallel::LaunchEnv& env) {
  for (const char* name : {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(name); v && std::atoll(v) > 0) return std::atoll(v);
  return env.world_size;
}

// distributed.optimizer_offload: the plan's host bytes of this node's ranks against the host memory available, before
// anything is loaded (a clear error now, not an out-of-memory kill mid-run).
void check_offload_fits(const config::Config& cfg, const parallel::LaunchEnv& env) {
  plan::PlanInputs in;
  in.world_size = env.world_size;
  const auto p = plan::plan_memory(plan::read_model_shape(cfg.model.path), cfg, in);
  plan::check_offload_host_memory(p, ranks_on_node(env), plan::host_available_bytes());
}

}  // namespace

TrainJob::TrainJob(const config::Config& cfg, const std::string& resume, const parallel::LaunchEnv& env) {
  train::check_world_size(cfg, env.world_size);
  if (cfg.distributed.optimizer_offload) check_offload_fits(cfg, env);
  const auto device = train_device(cfg, env);
  comm_ = std::make_unique<parallel::Comm>(env, cfg.distributed, device);
  const int64_t K = cfg.distributed.rollout_ranks;
  if (K == 0) {
    trainer_ = std::make_unique<train::Trainer>(cfg, resume, train::Placement{env, device, comm_.get()});
    return;
  }
  // Ranks [0, W - K) train, [W - K, W) sample (train/async/async_schedule.h).
  const int64_t T = env.world_size - K;
  const bool trains = env.rank < T;
  std::vector<int64_t> ranks;
  for (int64_t r = trains ? 0 : T; r < (trains ? T : env.world_size); ++r) ranks.push_back(r);
  group_ = std::make_unique<parallel::Comm>(*comm_, ranks, trains ? "trainers" : "rollout");
  const train::Placement where{env, device, group_.get(), comm_.get()};
  if (trains)
    trainer_ = std::make_unique<train::Trainer>(cfg, resume, where);
  else
    worker_ = std::make_unique<train::RolloutWorker>(cfg, where);
}

train::TrainSummary TrainJob::run() { return trainer_ ? trainer_->run() : worker_->run(); }

TrainJob::TrainJob(const config::Config& cfg, const std::string& resume)
    : TrainJob(cfg, resume, parallel::read_launch_env()) {}

TrainJob::~TrainJob() = default;

}  // namespace gspo::cli
