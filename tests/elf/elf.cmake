# Small shared objects the ELF import tests read, compiled with the system C
# compiler into <build>/tests/elf/ (never loaded). PTB_TEST_ELF_DIR names the
# folder.
set(PTB_TEST_ELF_DIR ${CMAKE_CURRENT_BINARY_DIR}/elf)
set(PTB_TEST_ELF_OUTPUTS)
foreach(name imports_builtin imports_missing)
  set(source ${CMAKE_CURRENT_LIST_DIR}/${name}.c)
  set(output ${PTB_TEST_ELF_DIR}/${name}.so)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PTB_TEST_ELF_DIR}
    COMMAND ${CMAKE_C_COMPILER} -shared -fPIC -O1 ${source} -o ${output}
    DEPENDS ${source}
    COMMENT "cc: test shared object ${name}.so"
    VERBATIM)
  list(APPEND PTB_TEST_ELF_OUTPUTS ${output})
endforeach()
add_custom_target(ptb_test_elf ALL DEPENDS ${PTB_TEST_ELF_OUTPUTS})
add_dependencies(ptbundle_tests ptb_test_elf)
target_compile_definitions(ptbundle_tests PRIVATE PTB_TEST_ELF_DIR="${PTB_TEST_ELF_DIR}")
