#include "gspo/cli/train_job.h"

#include "gspo/core/device.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/rank_share.h"

namespace gspo::cli {

c10::Device train_device(const config::Config& c, const parallel::LaunchEnv& env) {
  auto d = core::resolve_device(c.model.device, "model.device");
  if (d.is_cuda() && env.world_size > 1 && (c.model.device == "cuda" || c.model.device == "auto"))
    d = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  return d;
}

TrainJob::TrainJob(const config::Config& cfg, const std::string& resume, const parallel::LaunchEnv& env) {
  train::check_world_size(cfg, env.world_size);
  const auto device = train_device(cfg, env);
  comm_ = std::make_unique<parallel::Comm>(env, cfg.distributed, device);
  trainer_ = std::make_unique<train::Trainer>(cfg, resume, train::Placement{env, device, comm_.get()});
}

TrainJob::TrainJob(const config::Config& cfg, const std::string& resume)
    : TrainJob(cfg, resume, parallel::read_launch_env()) {}

TrainJob::~TrainJob() = default;

}  // namespace gspo::cli
