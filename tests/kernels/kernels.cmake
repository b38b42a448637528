# Builds the kernel images the kernel, compatibility and GPU tests read, with
# nvcc at build time, into <build>/tests/kernels/. The tests get the folder as
# PTB_TEST_KERNELS_DIR; without nvcc it is empty and PTB_TEST_KERNELS_MISSING
# says why, and the tests that need the images skip with that reason.
find_program(PTB_NVCC nvcc
  HINTS ENV CUDA_HOME ENV CUDA_PATH ${CUDAToolkit_ROOT}
  PATHS /usr/local/cuda
  PATH_SUFFIXES bin)

# The family targets (sm_100f) need CUDA 12.9 or newer.
set(PTB_TEST_KERNELS_WHY "nvcc not found at configure time (looked in PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda/bin)")
if(PTB_NVCC)
  execute_process(COMMAND ${PTB_NVCC} --version OUTPUT_VARIABLE nvcc_version_text RESULT_VARIABLE nvcc_status)
  string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" nvcc_release "${nvcc_version_text}")
  set(nvcc_version "${CMAKE_MATCH_1}")
  if(NOT nvcc_status EQUAL 0 OR nvcc_version STREQUAL "" OR nvcc_version VERSION_LESS 12.9)
    set(PTB_TEST_KERNELS_WHY "nvcc at ${PTB_NVCC} is release '${nvcc_version}'; the test images need nvcc 12.9 or newer")
    set(PTB_NVCC "")
  endif()
endif()

set(PTB_TEST_KERNELS_DIR ${CMAKE_CURRENT_BINARY_DIR}/kernels)
set(PTB_TEST_KERNEL_SOURCE ${CMAKE_CURRENT_LIST_DIR}/kernel.cu)
set(PTB_TEST_KERNEL_OUTPUTS)

# ptb_test_kernel(<output file> <nvcc arguments...>)
function(ptb_test_kernel output)
  set(path ${PTB_TEST_KERNELS_DIR}/${output})
  add_custom_command(OUTPUT ${path}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PTB_TEST_KERNELS_DIR}
    COMMAND ${PTB_NVCC} ${ARGN} ${PTB_TEST_KERNEL_SOURCE} -o ${path}
    DEPENDS ${PTB_TEST_KERNEL_SOURCE}
    COMMENT "nvcc: test kernel image ${output}"
    VERBATIM)
  set(PTB_TEST_KERNEL_OUTPUTS ${PTB_TEST_KERNEL_OUTPUTS} ${path} PARENT_SCOPE)
endfunction()

if(PTB_NVCC)
  # Bare cubins, one per target; 'a' is architecture-specific, 'f' family.
  foreach(target 80 86 90 90a 100a 100f 120)
    ptb_test_kernel(sm${target}.cubin -cubin -gencode arch=compute_${target},code=sm_${target})
  endforeach()
  # Bare PTX text.
  ptb_test_kernel(compute75.ptx -ptx -arch=compute_75)
  # Fatbins: PTX only; cubin + PTX with nvcc's default compression (cubin as
  # is, PTX zstd), everything zstd, everything LZ4, nothing compressed; and
  # architecture-specific / family cubin + PTX pairs.
  ptb_test_kernel(compute75.fatbin -fatbin -gencode arch=compute_75,code=compute_75)
  ptb_test_kernel(sm80_compute80.fatbin -fatbin -gencode arch=compute_80,code=[sm_80,compute_80])
  ptb_test_kernel(sm80_compute80_zstd.fatbin -fatbin -gencode arch=compute_80,code=[sm_80,compute_80]
                  -Xfatbin -compress-all)
  ptb_test_kernel(sm80_compute80_lz4.fatbin -fatbin -gencode arch=compute_80,code=[sm_80,compute_80]
                  --compress-mode=speed -Xfatbin -compress-all)
  ptb_test_kernel(sm80_compute80_raw.fatbin -fatbin -gencode arch=compute_80,code=[sm_80,compute_80]
                  --no-compress)
  ptb_test_kernel(sm90a_compute90a.fatbin -fatbin -gencode arch=compute_90a,code=[sm_90a,compute_90a])
  ptb_test_kernel(sm100f_compute100f.fatbin -fatbin -gencode arch=compute_100f,code=[sm_100f,compute_100f])
  ptb_test_kernel(sm120_compute120.fatbin -fatbin -gencode arch=compute_120,code=[sm_120,compute_120])
  # A shared library with several targets in .nv_fatbin.
  ptb_test_kernel(multi.so -shared -Xcompiler -fPIC
                  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
                  -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90)
  add_custom_target(ptb_test_kernels ALL DEPENDS ${PTB_TEST_KERNEL_OUTPUTS})
  add_dependencies(ptbundle_tests ptb_test_kernels)
  target_compile_definitions(ptbundle_tests PRIVATE PTB_TEST_KERNELS_DIR="${PTB_TEST_KERNELS_DIR}"
                             PTB_TEST_KERNELS_MISSING="")
else()
  message(STATUS "${PTB_TEST_KERNELS_WHY}: the tests that need kernel images will skip")
  target_compile_definitions(ptbundle_tests PRIVATE PTB_TEST_KERNELS_DIR=""
    PTB_TEST_KERNELS_MISSING="${PTB_TEST_KERNELS_WHY}")
endif()
