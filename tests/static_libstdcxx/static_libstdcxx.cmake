# Not in the sanitizer build: its runtime makes the program export every
# symbol it links, libstdc++ included, so the case this tests (no libstdc++
# in the global scope) cannot arise there; and LeakSanitizer reports a
# static libstdc++'s emergency exception pool (72704 bytes) as a leak.
if(PTB_SANITIZE)
  return()
endif()

# Two shared objects that link libstdc++ statically and export it, as
# link_libtorch=False libraries do, compiled with the C++ compiler alone (no
# sanitizer: they stand in for libraries built elsewhere), and a test program
# that links libstdc++ statically itself and opens both with LoadedLibrary.
set(PTB_LOCALE_USER_DIR ${CMAKE_CURRENT_BINARY_DIR}/static_libstdcxx)
set(PTB_LOCALE_USER_OUTPUTS)
foreach(variant 1 2)
  set(source ${CMAKE_CURRENT_LIST_DIR}/locale_user.cc)
  set(output ${PTB_LOCALE_USER_DIR}/locale_user_${variant}.so)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PTB_LOCALE_USER_DIR}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -shared -fPIC -O1 -static-libstdc++ -DLOCALE_USER_VARIANT=${variant}
            ${source} -o ${output}
    DEPENDS ${source}
    COMMENT "c++: test shared object locale_user_${variant}.so (static libstdc++)"
    VERBATIM)
  list(APPEND PTB_LOCALE_USER_OUTPUTS ${output})
endforeach()
add_custom_target(ptb_locale_user ALL DEPENDS ${PTB_LOCALE_USER_OUTPUTS})

add_executable(ptb_static_libstdcxx_tests ${CMAKE_CURRENT_LIST_DIR}/test_static_libstdcxx.cc)
add_dependencies(ptb_static_libstdcxx_tests ptb_locale_user)
target_include_directories(ptb_static_libstdcxx_tests PRIVATE ${DOCTEST_INCLUDE_DIR})
target_link_libraries(ptb_static_libstdcxx_tests PRIVATE ptb_runner_loader ptbundle_cuda ptb_warnings ${CMAKE_DL_LIBS})
target_link_options(ptb_static_libstdcxx_tests PRIVATE -static-libstdc++)
target_compile_definitions(ptb_static_libstdcxx_tests PRIVATE
  PTB_LOCALE_USER_A="${PTB_LOCALE_USER_DIR}/locale_user_1.so"
  PTB_LOCALE_USER_B="${PTB_LOCALE_USER_DIR}/locale_user_2.so")
add_test(NAME ptb_static_libstdcxx_tests COMMAND ptb_static_libstdcxx_tests "--test-case-exclude=*refused*")
add_test(NAME ptb_static_libstdcxx_refusal COMMAND ptb_static_libstdcxx_tests "--test-case=*refused*")
set_tests_properties(ptb_static_libstdcxx_tests ptb_static_libstdcxx_refusal PROPERTIES LABELS unit)
