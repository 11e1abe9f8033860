// What a run reports about its process and build: LibTorch version, peak host and device memory.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace gspo::core {

// "2.11.0" style version of the LibTorch we were built against.
std::string torch_version();

// Peak resident memory of this process in bytes (VmHWM), 0 when unknown.
int64_t peak_rss_bytes();

// Peak bytes allocated by LibTorch's CUDA caching allocator on `device` since the start (0 for a CPU device or a
// build without CUDA).
int64_t peak_device_bytes(c10::Device device);

}  // namespace gspo::core
