#include "gspo/parallel/launch_env.h"

#include <cstdlib>

#include "gspo/core/error.h"
#include "gspo/core/parse.h"

namespace gspo::parallel {
namespace {

int64_t to_int(const std::string& name, const std::string& text) {
  auto v = parse_int(text);
  if (!v) throw ConfigError("environment variable " + name + "='" + text + "' is not an integer");
  return *v;
}

int64_t int_var(const EnvLookup& env, const std::string& name, std::optional<int64_t> fallback) {
  auto v = env(name);
  if (v) return to_int(name, *v);
  if (fallback) return *fallback;
  throw ConfigError("environment variable " + name + " is not set (needed for a multi-process run)");
}

void check(const LaunchEnv& e, const std::string& rank_var, const std::string& world_var) {
  if (e.world_size < 1) throw ConfigError(world_var + " must be >= 1 (got " + std::to_string(e.world_size) + ")");
  if (e.rank < 0 || e.rank >= e.world_size)
    throw ConfigError(rank_var + "=" + std::to_string(e.rank) + " is outside [0, " + world_var + "=" +
                      std::to_string(e.world_size) + ")");
  if (e.local_rank < 0) throw ConfigError("the local rank must be >= 0 (got " + std::to_string(e.local_rank) + ")");
  if (e.master_port < 1 || e.master_port > 65535)
    throw ConfigError("MASTER_PORT=" + std::to_string(e.master_port) + " is not a TCP port (1..65535)");
  if (e.master_addr.empty()) throw ConfigError("MASTER_ADDR is empty");
}

LaunchEnv from_torchrun(const EnvLookup& env) {
  LaunchEnv e;
  e.source = "torchrun";
  e.world_size = int_var(env, "WORLD_SIZE", std::nullopt);
  e.rank = int_var(env, "RANK", std::nullopt);
  e.local_rank = int_var(env, "LOCAL_RANK", e.rank);  // unset: one node, rank r on device r
  if (auto a = env("MASTER_ADDR")) e.master_addr = *a;
  else if (e.world_size > 1) throw ConfigError("environment variable MASTER_ADDR is not set (WORLD_SIZE > 1)");
  e.master_port = int_var(env, "MASTER_PORT", e.world_size == 1 ? std::optional<int64_t>(29500) : std::nullopt);
  check(e, "RANK", "WORLD_SIZE");
  return e;
}

LaunchEnv from_slurm(const EnvLookup& env) {
  LaunchEnv e;
  e.source = "slurm";
  e.world_size = int_var(env, "SLURM_NTASKS", std::nullopt);
  e.rank = int_var(env, "SLURM_PROCID", std::nullopt);
  e.local_rank = int_var(env, "SLURM_LOCALID", 0);
  if (auto a = env("MASTER_ADDR")) {
    e.master_addr = *a;
  } else if (auto nodes = env("SLURM_JOB_NODELIST")) {
    e.master_addr = first_slurm_host(*nodes);
  } else if (e.world_size > 1) {
    throw ConfigError("Slurm run with SLURM_NTASKS > 1 but neither MASTER_ADDR nor SLURM_JOB_NODELIST is set");
  }
  // One port per job, so two jobs sharing a node do not collide; MASTER_PORT overrides.
  const int64_t job = int_var(env, "SLURM_JOB_ID", 0);
  e.master_port = int_var(env, "MASTER_PORT", 20000 + job % 20000);
  check(e, "SLURM_PROCID", "SLURM_NTASKS");
  return e;
}

}  // namespace

LaunchEnv read_launch_env(const EnvLookup& env) {
  if (env("WORLD_SIZE") || env("RANK")) return from_torchrun(env);
  if (env("SLURM_PROCID") && env("SLURM_NTASKS")) return from_slurm(env);
  return LaunchEnv{};
}

LaunchEnv read_launch_env() {
  return read_launch_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  });
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first top-level entry (commas inside [...] do not split entries).
  std::string entry;
  int depth = 0;
  for (char c : nodelist) {
    if (c == ',' && depth == 0) break;
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    entry += c;
  }
  if (entry.empty() || depth != 0) throw ConfigError("SLURM_JOB_NODELIST='" + nodelist + "' is not a Slurm node list");
  // Each [a-b,c] group becomes its first value, written as it appears (zero padding kept).
  std::string host;
  for (size_t i = 0; i < entry.size(); ++i) {
    if (entry[i] != '[') {
      host += entry[i];
      continue;
    }
    const size_t close = entry.find(']', i);
    const std::string group = entry.substr(i + 1, close - i - 1);
    const size_t stop = group.find_first_of(",-");
    host += group.substr(0, stop);
    i = close;
  }
  return host;
}

}  // namespace gspo::parallel
