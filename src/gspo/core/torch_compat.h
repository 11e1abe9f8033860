// The one adapter over LibTorch version differences (Debian's 1.13 on CPU machines, PyTorch 2.x wheels on GPU
// machines). Code elsewhere calls these instead of writing #if TORCH_VERSION_* itself.
#pragma once
#include <ATen/core/Generator.h>
#include <c10/core/Device.h>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace torch::jit {
struct Module;
}

namespace gspo::compat {

// "1.13.1" style version of the LibTorch we were built against.
std::string torch_version();

// A CPU random generator seeded deterministically; same seed -> same stream on 1.13 and 2.x.
at::Generator make_cpu_generator(uint64_t seed);

// Loads a TorchScript module, filling the values of the requested extra files (missing ones stay empty).
// Throws c10::Error (callers translate) when the file is not a TorchScript archive.
torch::jit::Module load_module(const std::string& path, c10::Device device,
                               std::unordered_map<std::string, std::string>& extra_files);

// Peak resident memory of this process in bytes (VmHWM), 0 when unknown.
int64_t peak_rss_bytes();

// Peak bytes allocated by LibTorch's CUDA caching allocator on `device` since the start (0 for a CPU device or a
// build without CUDA).
int64_t peak_device_bytes(c10::Device device);

}  // namespace gspo::compat
