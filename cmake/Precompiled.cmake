# Precompiled headers for the heavy header-only dependencies. nlohmann/json
# and the flatc-generated program schema are tens of thousands
# of lines each; parsing them once per target instead of once per translation
# unit is most of what a cold build of the `ptbundle` target saves
# (scripts/build-time prints the figures). PTB_PCH=OFF checks that every file
# still includes what it uses.
option(PTB_PCH "Precompile the heavy dependency headers" ON)

function(ptb_precompile target)
  if(NOT PTB_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${ARGN})
endfunction()

# A target whose sources need no header beyond another's precompiled set
# uses that one instead of building its own (with 2 cores, each set took
# 15-20 s to build). GCC takes a precompiled header made with other -D
# macros as long as the header does not use them; -Winvalid-pch with
# -Werror would stop the build if it did not. It does refuse one made with
# -fPIC for -fPIE code, so an executable that shares a library's set is
# compiled as PIC (the link still makes a PIE).
function(ptb_share_precompiled target from)
  if(PTB_PCH)
    target_precompile_headers(${target} REUSE_FROM ${from})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${target} PRIVATE -fPIC)
    endif()
  endif()
endfunction()

set(PTB_PCH_COMMON <algorithm> <filesystem> <map> <memory> <optional> <string> <string_view> <vector>)
# libbundle's set, which libcuda, libexport, the apps and the tests share:
# public headers include no JSON, but these targets' sources read or write
# it. (CLI11 is compiled once, in apps/cli.cc; doctest's header is light
# without its implementation, about 10 ms.)
set(PTB_PCH_JSON <nlohmann/json.hpp>)
set(PTB_PCH_SCHEMA <flatbuffers/flatbuffers.h> "${PTB_GENERATED_DIR}/ptbundle/fb/program_generated.h")
