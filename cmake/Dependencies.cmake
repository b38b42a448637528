# Every dependency is a Debian package (see README). On a machine without the
# packages (a GPU machine that is not Debian), PTB_DEPS_PREFIX points at a folder made by
# scripts/pack-deps that holds the same headers, libraries and flatc.
set(PTB_DEPS_PREFIX "" CACHE PATH "Folder with dependency headers/libraries when they are not installed system-wide")
if(PTB_DEPS_PREFIX)
  get_filename_component(PTB_DEPS_PREFIX "${PTB_DEPS_PREFIX}" ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH "${PTB_DEPS_PREFIX}")
  list(PREPEND CMAKE_PROGRAM_PATH "${PTB_DEPS_PREFIX}/bin")
  # FindOpenSSL searches pkg-config's answer before CMAKE_PREFIX_PATH.
  set(OPENSSL_ROOT_DIR "${PTB_DEPS_PREFIX}")
  # The packed libzip finds its own needs (libbz2, libcrypto when packed) only
  # through its user's run path: it has none. DT_RPATH, unlike the newer
  # DT_RUNPATH, also serves the dependencies of the executable's libraries, so
  # one entry on our binaries is enough, without LD_LIBRARY_PATH.
  list(APPEND CMAKE_BUILD_RPATH "${PTB_DEPS_PREFIX}/lib")
  add_link_options(LINKER:--disable-new-dtags)
endif()

find_program(FLATC_EXECUTABLE flatc REQUIRED)
find_path(FLATBUFFERS_INCLUDE_DIR flatbuffers/flatbuffers.h REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
find_path(NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_path(LIBZIP_INCLUDE_DIR zip.h REQUIRED)
find_library(LIBZIP_LIBRARY NAMES zip REQUIRED)
find_package(Threads REQUIRED)

add_library(ptb_deps INTERFACE)
target_include_directories(ptb_deps SYSTEM INTERFACE
  ${FLATBUFFERS_INCLUDE_DIR} ${CLI11_INCLUDE_DIR} ${NLOHMANN_JSON_INCLUDE_DIR} ${LIBZIP_INCLUDE_DIR})

if(PTB_TESTS)
  find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h REQUIRED)
endif()

# LibTorch is optional: with it, `ptbundle run` and test-case checks are built.
set(PTB_HAVE_LIBTORCH OFF)
set(PTB_LIBTORCH_STATUS "not searched (PTB_LIBTORCH=OFF)")
if(NOT PTB_LIBTORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    if(Torch_VERSION VERSION_LESS 2.6)
      set(PTB_LIBTORCH_STATUS "found LibTorch ${Torch_VERSION}, but 2.6 or newer is needed")
    elseif(NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/torch/csrc/inductor/aoti_runtime/interface.h")
      set(PTB_LIBTORCH_STATUS "found LibTorch ${Torch_VERSION} without AOTInductor's headers (torch/csrc/inductor/aoti_runtime/interface.h)")
    else()
      set(PTB_HAVE_LIBTORCH ON)
      set(PTB_LIBTORCH_STATUS "LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")
    endif()
  else()
    set(PTB_LIBTORCH_STATUS "LibTorch not found; set -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')")
  endif()
  if(PTB_LIBTORCH STREQUAL "ON" AND NOT PTB_HAVE_LIBTORCH)
    message(FATAL_ERROR "PTB_LIBTORCH=ON: ${PTB_LIBTORCH_STATUS}")
  endif()
endif()
message(STATUS "ptbundle run: ${PTB_LIBTORCH_STATUS}")
if(PTB_HAVE_LIBTORCH)
  # Every object linked into one binary must agree on libstdc++'s ABI
  # (_GLIBCXX_USE_CXX11_ABI), not only the targets that include torch headers.
  separate_arguments(PTB_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  foreach(flag ${PTB_TORCH_CXX_FLAGS})
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
endif()
