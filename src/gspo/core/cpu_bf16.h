// bfloat16 on a CPU: most CPUs have no bf16 matrix units, and LibTorch's bf16 matrix products there run many times
// slower than float32 ones (configs/qwen3-0.6b-gspo.yaml on this project's 2-core AMD EPYC machines: 56 s of a 60 s
// step in the update, 8 responses of 64 tokens; issue #41). Measured at start-up so the warning says what this CPU does.
#pragma once

namespace gspo::core {

// How many times slower a linear layer's bf16 matrix products (forward and backward: 64 tokens, 512 -> 1024) are than
// float32 ones on this CPU, best of a few runs each (~0.1 s at a 30x slowdown). 1 or less: bf16 is as fast.
double cpu_bf16_matmul_slowdown();

}  // namespace gspo::core
