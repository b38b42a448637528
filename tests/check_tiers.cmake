# ctest's ptbundle_tests_tiers: every doctest case of ptbundle_tests is in
# exactly one tier of tests/tiers.cmake, so no case is left out of every
# ctest entry, and none runs twice. Fails naming the counts.
include(${PTB_TIER_FILE})

function(count_cases out)
  execute_process(COMMAND ${PTB_TESTS_BINARY} --count ${ARGN}
                  OUTPUT_VARIABLE text RESULT_VARIABLE status)
  string(REGEX MATCH "passing the current filters: ([0-9]+)" found "${text}")
  if(NOT status EQUAL 0 OR found STREQUAL "")
    message(FATAL_ERROR "${PTB_TESTS_BINARY} --count ${ARGN}: exit ${status}, no count in: ${text}")
  endif()
  set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

count_cases(all)
set(sum 0)
set(parts "")
foreach(tier ${PTB_TIERS})
  count_cases(n ${PTB_TIER_FILTERS_${tier}})
  math(EXPR sum "${sum} + ${n}")
  string(APPEND parts " ${tier} ${n}")
endforeach()
if(NOT sum EQUAL all)
  message(FATAL_ERROR "tests/tiers.cmake: the tiers hold ${sum} test cases (${parts} ) but ptbundle_tests has "
                      "${all}; expected each case in exactly one tier")
endif()
message(STATUS "${all} test cases:${parts}")
