# The robot API tested as a robot program uses it: linked to libptbundle.so
# alone (no static library of the project), the bundles it opens made by the
# ptbundle command. Also the C example and the Python module's tests.
add_executable(ptbundle_robot_tests ${CMAKE_CURRENT_LIST_DIR}/test_robot_api.cc ${CMAKE_CURRENT_LIST_DIR}/test_c_api.cc
  ${CMAKE_CURRENT_LIST_DIR}/robot_support.cc)
target_include_directories(ptbundle_robot_tests PRIVATE ${DOCTEST_INCLUDE_DIR})
target_link_libraries(ptbundle_robot_tests PRIVATE ptbundle::ptbundle ptb_warnings)
target_compile_definitions(ptbundle_robot_tests PRIVATE
  PTB_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PTB_CLI_PATH="$<TARGET_FILE:ptbundle>")
add_dependencies(ptbundle_robot_tests ptbundle)
add_test(NAME ptbundle_robot_tests COMMAND ptbundle_robot_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(ptbundle_robot_tests PROPERTIES LABELS fixtures)

# The C example, built from this tree as CI builds it against the installed package.
add_executable(ptbundle_c_example ${PROJECT_SOURCE_DIR}/examples/c/robot.c)
target_link_libraries(ptbundle_c_example PRIVATE ptbundle::ptbundle)
set_target_properties(ptbundle_c_example PROPERTIES LINKER_LANGUAGE C)
add_test(NAME ptbundle_c_example_usage COMMAND ptbundle_c_example)
set_tests_properties(ptbundle_c_example_usage PROPERTIES WILL_FAIL TRUE LABELS unit)

# Debian's interpreter where there is one: scripts/install-deps --test gives
# it NumPy, which another python3 first on PATH may lack.
if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 COMPONENTS Interpreter)
# In a sanitized build the library needs the ASan runtime loaded before it,
# which a Python interpreter does not link: preload it. CPython's own
# allocations at exit are not the library's leaks.
set(PTB_PYTHON_TEST_ENV "")
if(PTB_SANITIZE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE PTB_LIBASAN
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(PTB_PYTHON_TEST_ENV ";LD_PRELOAD=${PTB_LIBASAN};ASAN_OPTIONS=detect_leaks=0")
endif()
if(Python3_FOUND)
  add_test(NAME ptbundle_python COMMAND ${Python3_EXECUTABLE} -m unittest -v tests/python/test_ptbundle.py
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(ptbundle_python PROPERTIES ENVIRONMENT
    "PTBUNDLE_LIBRARY=$<TARGET_FILE:ptbundle_robot>;PTBUNDLE_CLI=$<TARGET_FILE:ptbundle>;PYTHONPATH=${PROJECT_SOURCE_DIR}/python${PTB_PYTHON_TEST_ENV}")
  set_tests_properties(ptbundle_python PROPERTIES LABELS unit)
endif()
# The GPU tier's Python test compares with PyTorch, which is usually
# installed for the python3 first on PATH (a virtual environment), not for
# Debian's: PTB_TORCH_PYTHON names it. The test skips (and passes) without
# PyTorch and a CUDA GPU.
find_program(PTB_TORCH_PYTHON NAMES python3 DOC "the Python interpreter with PyTorch, for the GPU tier")
if(PTB_TORCH_PYTHON)
  add_test(NAME ptbundle_python_gpu COMMAND ${PTB_TORCH_PYTHON} -m unittest -v tests/python/test_ptbundle_gpu.py
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(ptbundle_python_gpu PROPERTIES ENVIRONMENT
    "PTBUNDLE_LIBRARY=$<TARGET_FILE:ptbundle_robot>;PTBUNDLE_CLI=$<TARGET_FILE:ptbundle>;PYTHONPATH=${PROJECT_SOURCE_DIR}/python${PTB_PYTHON_TEST_ENV}")
  set_tests_properties(ptbundle_python_gpu PROPERTIES LABELS gpu)
endif()
