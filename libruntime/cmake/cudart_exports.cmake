# cmake -P cudart_exports.cmake ARCHIVE AR OBJCOPY UNHIDE WORK_DIR OUT_ARCHIVE
#
# The static CUDA runtime (libcudart_static.a) defines every cuda* function
# with hidden visibility, so a module that links it cannot export them, and a
# link_libtorch=False library imports them from its host (cudaMalloc, ...).
# This copies the archive with its cuda* functions made default-visible
# (unhide_symbols.cc), so the module's version script (exports.map) exports
# them with no forwarding call, and with cudaMemcpy renamed
# ptb_cudart_cudaMemcpy: memcpy_route.cc defines the module's own.
set(archive ${CMAKE_ARGV3})
set(ar ${CMAKE_ARGV4})
set(objcopy ${CMAKE_ARGV5})
set(unhide ${CMAKE_ARGV6})
set(work ${CMAKE_ARGV7})
set(out_archive ${CMAKE_ARGV8})
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
execute_process(COMMAND ${ar} x ${archive} WORKING_DIRECTORY ${work} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${ar} x ${archive} failed")
endif()
file(GLOB members ${work}/*.o)
foreach(member ${members})
  execute_process(COMMAND ${unhide} ${member} cuda RESULT_VARIABLE status OUTPUT_QUIET)
  execute_process(COMMAND ${objcopy} --redefine-sym cudaMemcpy=ptb_cudart_cudaMemcpy ${member}
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${objcopy} failed on ${member}")
  endif()
endforeach()
file(REMOVE ${out_archive})
execute_process(COMMAND ${ar} rcs ${out_archive} ${members} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${ar} rcs ${out_archive} failed")
endif()
