# `ptbundle_seamed`: the CLI with the test seams (env_seams.cc), which the
# hostile tests start to stop an export at a given step or to shrink a file
# right after it is mapped. Only tests run it; `ptbundle` has no seams.
add_executable(ptbundle_seamed ${CMAKE_CURRENT_LIST_DIR}/env_seams.cc)
target_link_libraries(ptbundle_seamed PRIVATE ptbundle_cli ptb_json_value ptb_warnings)
add_dependencies(ptbundle_tests ptbundle_seamed)
target_compile_definitions(ptbundle_tests PRIVATE PTB_SEAMED_CLI_PATH="$<TARGET_FILE:ptbundle_seamed>")
