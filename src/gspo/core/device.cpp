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
    c10::Device d(c10::kCPU);
    try {
      d = c10::Device(spec);
    } catch (const c10::Error&) {
      throw ConfigError(key + " must be cpu, cuda, cuda:N or auto (got '" + spec + "')");
    }
    // "cuda" names no index; CUDA calls that take one (allocator statistics, streams) need a real one.
    if (!d.has_index()) return c10::Device(c10::kCUDA, 0);
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (d.index() >= count)
      throw ConfigError(key + " is '" + spec + "' but this machine has " + std::to_string(count) + " CUDA device(s)");
    return d;
  }
  throw ConfigError(key + " must be cpu, cuda, cuda:N or auto (got '" + spec + "')");
}

}  // namespace gspo::core
