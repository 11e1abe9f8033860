// Precompiled header: the heavy LibTorch headers plus the standard library, compiled once per build.
#pragma once
#include <torch/torch.h>
#include <torch/script.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
