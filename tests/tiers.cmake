# ptbundle_tests registered with ctest by tier, each tier a ctest entry with
# its label, chosen by doctest's filters (test case names and source files):
#   unit      needs nothing but the build
#   fixtures  reads the real files in ../shared/fixtures (or $PTB_FIXTURES)
#   race      loops of concurrent writers, readers and signals (RaceLoop)
#   slow      cases that take tens of seconds on a laptop core
#   gpu       needs an NVIDIA GPU (and says SKIPPED, naming what is missing,
#             where there is none; ctest then reports the entry as skipped)
# `ptbundle_tests_tiers` checks that every test case is in exactly one tier.
# Patterns may not contain commas: doctest splits its filters there.

# Test case names, by tier.
set(PTB_GPU_CASES "run on GPU*" "GPU check*" "verify on the GPU*" "GPU shim reference*" "GPU shim layouts*")
set(PTB_RACE_CASES "hostile: two exports racing*" "hostile: a signal*at a random moment*"
  "hostile: a bundle file cut short at a random moment*" "hostile: readers wait for a writer*"
  "merge pair: a kill at any moment*" "rewritten in place:*" "locks: two signs at once*")
set(PTB_SLOW_CASES "corrupt: every prefix*" "corrupt: flipped bytes*" "hostile: verify is linear*"
  "hostile: a zip bomb*" "sign: large files*")
# Source files whose cases read the fixtures.
set(PTB_FIXTURE_FILES test_aoti_imports.cc test_bpte.cc test_bundle_open.cc test_compat.cc test_corrupt.cc
  test_cuda_payload.cc test_elf_imports.cc test_export.cc test_gpus.cc test_hostile.cc test_inspect.cc
  test_kernels.cc test_merge.cc test_npy.cc test_program_data.cc test_pt2.cc test_ptd.cc test_pte.cc
  test_run.cc test_run_example.cc test_run_weights.cc test_samplers.cc test_sign.cc test_tolerance.cc
  test_verify.cc test_weightless.cc test_writers.cc test_default_packages.cc test_checked_inputs.cc
  test_merge_pair.cc test_rewritten_in_place.cc test_progress.cc test_tune_bundle.cc)

list(JOIN PTB_GPU_CASES "," gpu_cases)
list(JOIN PTB_RACE_CASES "," race_cases)
list(JOIN PTB_SLOW_CASES "," slow_cases)
set(fixture_files "")
foreach(file ${PTB_FIXTURE_FILES})
  list(APPEND fixture_files "*/${file}")
endforeach()
list(JOIN fixture_files "," fixture_files)
set(not_other "--test-case-exclude=${gpu_cases},${race_cases},${slow_cases}")

set(PTB_TIER_FILTERS_unit "--source-file-exclude=${fixture_files}" "${not_other}")
set(PTB_TIER_FILTERS_fixtures "--source-file=${fixture_files}" "${not_other}")
set(PTB_TIER_FILTERS_race "--test-case=${race_cases}")
set(PTB_TIER_FILTERS_slow "--test-case=${slow_cases}")
set(PTB_TIER_FILTERS_gpu "--test-case=${gpu_cases}")

set(PTB_TIERS unit fixtures race slow gpu)
foreach(tier ${PTB_TIERS})
  add_test(NAME ptbundle_tests_${tier} COMMAND ptbundle_tests ${PTB_TIER_FILTERS_${tier}}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(ptbundle_tests_${tier} PROPERTIES LABELS ${tier}
                       SKIP_REGULAR_EXPRESSION "\\[ptbundle\\] every test case skipped")
endforeach()
set_tests_properties(ptbundle_tests_slow ptbundle_tests_race PROPERTIES TIMEOUT 3600)
set_tests_properties(ptbundle_tests_gpu PROPERTIES TIMEOUT 3600 RESOURCE_LOCK gpu)

# Every case in exactly one tier: the tiers' counts add up to the whole.
set(tier_file_text "set(PTB_TIERS ${PTB_TIERS})\n")
foreach(tier ${PTB_TIERS})
  string(APPEND tier_file_text "set(PTB_TIER_FILTERS_${tier} [==[${PTB_TIER_FILTERS_${tier}}]==])\n")
endforeach()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/tier_filters.cmake "${tier_file_text}")
add_test(NAME ptbundle_tests_tiers
         COMMAND ${CMAKE_COMMAND} -DPTB_TESTS_BINARY=$<TARGET_FILE:ptbundle_tests>
                 -DPTB_TIER_FILE=${CMAKE_CURRENT_BINARY_DIR}/tier_filters.cmake
                 -P ${CMAKE_CURRENT_LIST_DIR}/check_tiers.cmake)
set_tests_properties(ptbundle_tests_tiers PROPERTIES LABELS unit)
