// Resolving a device string from config or flags ("cpu", "cuda", "cuda:1", "auto").
#pragma once
#include <c10/core/Device.h>
#include <string>

namespace gspo::core {

// Throws ConfigError naming `key` when the device is malformed or CUDA is requested but unavailable.
c10::Device resolve_device(const std::string& spec, const std::string& key);

}  // namespace gspo::core
