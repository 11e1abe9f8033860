#include "gspo/core/device.h"

#include <torch/torch.h>

#include "gspo/core/error.h"

namespace gspo::core {
namespace {

ConfigError malformed(const std::string& key, const std::string& spec) {
  return ConfigError(key + " must be cpu, cuda, cuda:N or auto (got '" + spec + "')");
}

}  // namespace

c10::DeviceType device_type(const std::string& spec, bool cuda_available, const std::string& key) {
  if (spec == "auto") return cuda_available ? c10::kCUDA : c10::kCPU;
  if (spec == "cpu") return c10::kCPU;
  if (spec.rfind("cuda", 0) == 0) return c10::kCUDA;
  throw malformed(key, spec);
}

c10::Device resolve_device(const std::string& spec, const std::string& key) {
  // CUDA is probed only where the answer matters (auto), as a "cpu" run never touches the driver.
  if (device_type(spec, spec == "auto" && torch::cuda::is_available(), key) == c10::kCPU) return c10::kCPU;
  if (spec == "auto") return c10::Device(c10::kCUDA, 0);
  if (!torch::cuda::is_available())
    throw ConfigError(key + " is '" + spec + "' but this gspo build or machine has no CUDA device; use cpu");
  c10::Device d(c10::kCPU);
  try {
    d = c10::Device(spec);
  } catch (const c10::Error&) {
    throw malformed(key, spec);
  }
  // "cuda" names no index; CUDA calls that take one (allocator statistics, streams) need a real one.
  if (!d.has_index()) return c10::Device(c10::kCUDA, 0);
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  if (d.index() >= count)
    throw ConfigError(key + " is '" + spec + "' but this machine has " + std::to_string(count) + " CUDA device(s)");
  return d;
}

}  // namespace gspo::core
