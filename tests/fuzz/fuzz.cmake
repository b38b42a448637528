# The fuzz tier: scripts/fuzz builds the libFuzzer targets of the readers
# with clang (ASan + UBSan) and runs each for PTB_FUZZ_SECONDS, seeded with
# the fixtures; ctest's `fuzz` entry (label fuzz) runs it.
set(PTB_FUZZ_SECONDS 60 CACHE STRING "Seconds each libFuzzer target runs under ctest")
add_test(NAME fuzz COMMAND ${PROJECT_SOURCE_DIR}/scripts/fuzz ${PTB_FUZZ_SECONDS}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(fuzz PROPERTIES LABELS fuzz TIMEOUT 0)
