// Where this process sits in a data-parallel job, read from the environment that launchers already set:
// torchrun style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or Slurm (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, first host of SLURM_JOB_NODELIST). Neither set: a single process (rank 0 of 1).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace gspo::parallel {

struct LaunchEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;               // index on its node, selects cuda:LOCAL_RANK (torchrun style unset: RANK)
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::string source = "single";        // "torchrun", "slurm" or "single"
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Throws ConfigError naming the variable for a non-integer, out-of-range or missing value.
LaunchEnv read_launch_env(const EnvLookup& env);
LaunchEnv read_launch_env();  // the process environment

// First host of a Slurm node list: "gpu[01-04,07],cpu3" -> "gpu01", "a[1-2]-b[5-6]" -> "a1-b5".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace gspo::parallel
