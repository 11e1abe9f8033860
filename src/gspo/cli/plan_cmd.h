// `gspo plan`: the predicted peak memory per rank of a config's training step, part by part (plan/memory.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::cli {

struct PlanArgs {
  std::string config;                  // YAML config; "" = defaults
  std::vector<std::string> overrides;  // --set section.key=value
  int64_t world_size = 1;              // data-parallel ranks
  std::string hf_config;               // Hugging Face config.json; "" = the shape in model.path's manifest
  int64_t prompt_tokens = 512;         // the longest prompt of a step, in tokens
  double runtime_mb = -1;              // < 0 = plan::kRuntimeMb (measured)
  double device_gb = 80;               // memory one rank may use, GiB
  bool json = false;                   // one JSON object instead of the table
};
int plan(const PlanArgs& a);

}  // namespace gspo::cli
