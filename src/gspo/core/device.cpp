#include "gspo/core/device.h"

#include <torch/torch.h>

#include "gspo/core/error.h"

namespace gspo::core {

c10::Device resolve_device(const std::string& spec, const std::string& key) {
  if (spec == "auto") return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (spec == "cpu") return c10::kCPU;
  if (spec.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      throw ConfigError(key + " is '" + spec + "' but this gspo build or machine has no CUDA device; use cpu");
    try {
      return c10::Device(spec);
    } catch (const c10::Error&) {
    }
  }
  throw ConfigError(key + " must be cpu, cuda, cuda:N or auto (got '" + spec + "')");
}

}  // namespace gspo::core
