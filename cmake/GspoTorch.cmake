# Finds the LibTorch inside the pinned PyPI torch wheel (2.11.0, built for CUDA 13.0) and defines gspo_torch, the
# one target the library links for it.
#
# WITH_CUDA=ON: Torch's own CMake package (it needs the CUDA toolkit: nvcc, cuDNN headers), linked so that
#   libtorch_cuda.so is loaded even though no symbol of ours names it (--no-as-needed), with ProcessGroupNCCL
#   compiled in (USE_C10D_NCCL; nccl.h from the wheel's nvidia-nccl package or the toolkit).
# WITH_CUDA=OFF: the same wheel's CPU libraries (libtorch_cpu, libc10) as imported targets, without Torch's
#   package, whose CUDA checks fail where no toolkit is installed. The binary then has no CUDA code paths.

if(NOT Torch_DIR AND GSPO_PYTHON)
  execute_process(COMMAND ${GSPO_PYTHON} -c "import torch, sys; sys.stdout.write(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _gspo_torch_prefix RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0)
    list(APPEND CMAKE_PREFIX_PATH "${_gspo_torch_prefix}")
    set(Torch_DIR "${_gspo_torch_prefix}/Torch")
  endif()
endif()
if(NOT Torch_DIR OR NOT EXISTS "${Torch_DIR}/TorchConfig.cmake")
  message(FATAL_ERROR "gspo: no LibTorch found. Run scripts/setup.sh (it installs the pinned torch wheel), then "
                      "configure with -DGSPO_PYTHON=<its python> (scripts/build.sh does), or set Torch_DIR.")
endif()
get_filename_component(GSPO_TORCH_ROOT "${Torch_DIR}/../../.." ABSOLUTE)  # site-packages/torch

add_library(gspo_torch INTERFACE)
# The wheel's libtorch.so and libtorch_cpu.so export their own copies of std::filesystem (built with another
# libstdc++; libtorch.so's crashes through unresolved weak references). Listing libstdc++ first among the needed
# libraries makes the dynamic linker bind our std::filesystem calls to the system libstdc++ we compiled against.
target_link_libraries(gspo_torch INTERFACE "-Wl,--no-as-needed" stdc++ "-Wl,--as-needed")
if(WITH_CUDA)
  # CUDA 13 ships NVTX 3 only (header-only): Torch's package still asks for CUDA::nvToolsExt.
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::nvToolsExt AND TARGET CUDA::nvtx3)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
    target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
  endif()
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
    set(TORCH_CUDA_ARCH_LIST "9.0")  # Torch's package ignores CMAKE_CUDA_ARCHITECTURES; Hopper, as the lent GPUs
  endif()
  find_package(Torch REQUIRED)
  find_path(GSPO_NCCL_INCLUDE nccl.h
            HINTS "${GSPO_TORCH_ROOT}/../nvidia/nccl/include" ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  # libtorch_cuda.so itself loads the wheel's libnccl.so.2 (RUNPATH); we only need the matching header.
  if(NOT GSPO_NCCL_INCLUDE)
    message(FATAL_ERROR "gspo: WITH_CUDA=ON but nccl.h not found (pip's nvidia-nccl-cu13 or the toolkit)")
  endif()
  target_include_directories(gspo_torch INTERFACE ${TORCH_INCLUDE_DIRS} ${GSPO_NCCL_INCLUDE})
  target_link_libraries(gspo_torch INTERFACE "-Wl,--no-as-needed" ${TORCH_LIBRARIES} "-Wl,--as-needed")
  target_compile_definitions(gspo_torch INTERFACE GSPO_WITH_CUDA=1 USE_C10D_NCCL=1 USE_C10D_GLOO=1)
  message(STATUS "gspo: LibTorch ${Torch_VERSION} with CUDA ${CUDAToolkit_VERSION}; nccl.h from ${GSPO_NCCL_INCLUDE}")
else()
  foreach(lib torch_cpu c10)
    find_library(GSPO_${lib}_LIBRARY ${lib} PATHS "${GSPO_TORCH_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
  endforeach()
  target_include_directories(gspo_torch INTERFACE "${GSPO_TORCH_ROOT}/include"
                             "${GSPO_TORCH_ROOT}/include/torch/csrc/api/include")
  target_link_libraries(gspo_torch INTERFACE ${GSPO_torch_cpu_LIBRARY} ${GSPO_c10_LIBRARY})
  target_compile_definitions(gspo_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1 USE_C10D_GLOO=1)
  message(STATUS "gspo: LibTorch from ${GSPO_TORCH_ROOT} (CPU libraries only)")
endif()
