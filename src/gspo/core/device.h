// Resolving a device string from config or flags ("cpu", "cuda", "cuda:1", "auto").
#pragma once
#include <c10/core/Device.h>
#include <string>

namespace gspo::core {

// Throws ConfigError naming `key` when the device is malformed or CUDA is requested but unavailable.
c10::Device resolve_device(const std::string& spec, const std::string& key);

// The kind of device `spec` names, resolve_device's rule without probing the machine: "auto" is CUDA when
// `cuda_available`, else the CPU. ConfigError naming `key` when `spec` is none of cpu, cuda..., auto.
c10::DeviceType device_type(const std::string& spec, bool cuda_available, const std::string& key);

}  // namespace gspo::core
