// What a run reports about its process and build: LibTorch version, peak host and device memory, for the whole
// process and per phase of a step.
//
// Phases: reset_phase_peaks() starts one; phase_peak_bytes() is its high-water mark so far. Resetting clears the
// kernel's VmHWM (writing "5" to /proc/self/clear_refs) and the CUDA caching allocator's peak statistics, so the
// whole-process figures (peak_rss_bytes, peak_device_bytes) fold the value before each reset into a running maximum
// and stay whole-run peaks.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace gspo::core {

// "2.11.0" style version of the LibTorch we were built against.
std::string torch_version();

// Peak resident memory of this process in bytes since it started (VmHWM and every value it had before a reset),
// 0 when unknown.
int64_t peak_rss_bytes();

// Peak bytes allocated by LibTorch's CUDA caching allocator on `device` since the start (0 for a CPU device or a
// build without CUDA). An index-less CUDA device means the current one.
int64_t peak_device_bytes(c10::Device device);

// Starts a new phase: the resident-memory high-water mark restarts at the current resident size and, for a CUDA
// device, the allocator's peak at the bytes allocated now. Returns false when the kernel refused the RSS reset
// (not Linux, or /proc/self/clear_refs not writable): the RSS phase peak is then the whole-process peak so far.
// Cost: one small /proc write and read (and an allocator call on CUDA); the kernel walks the page tables once.
bool reset_phase_peaks(c10::Device device);

// High-water mark since the last reset_phase_peaks (since the start without one): allocator bytes on `device` when
// it is a CUDA device, else this process's resident bytes.
int64_t phase_peak_bytes(c10::Device device);

// Hands the C allocator's free heap pages back to the kernel (glibc malloc_trim), so memory a phase freed (a
// gathered copy of the weights, the model as loaded) stops counting as this process's resident memory and other
// processes on the host can use it. Cost: a walk of the allocator's free lists, milliseconds. No-op elsewhere.
void release_free_host_memory();

// Bytes a CUDA device can still give this process: the driver's free memory plus what LibTorch's caching allocator
// holds reserved but unused (it hands those out first). 0 for a CPU device or a build without CUDA.
int64_t available_device_bytes(c10::Device device);

// The compute capability's major version of a CUDA device (8 for Ampere, 9 for Hopper), or 0 for any other device
// or a build without CUDA. FlashAttention-2 needs 8 or more.
int cuda_capability_major(c10::Device device);

}  // namespace gspo::core
