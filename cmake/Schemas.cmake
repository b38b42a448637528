# flatc turns schemas/*.fbs into C++ headers at build time; nothing generated
# is committed. Headers land in <build>/generated/ptbundle/fb/.
set(PTB_SCHEMA_DIR "${PROJECT_SOURCE_DIR}/schemas")
set(PTB_GENERATED_DIR "${PROJECT_BINARY_DIR}/generated")
set(PTB_GENERATED_HEADERS)
foreach(schema scalar_type program flat_tensor bundled_program)
  set(out "${PTB_GENERATED_DIR}/ptbundle/fb/${schema}_generated.h")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${FLATC_EXECUTABLE} --cpp --gen-object-api --scoped-enums --reflect-names
            -I "${PTB_SCHEMA_DIR}" -o "${PTB_GENERATED_DIR}/ptbundle/fb" "${PTB_SCHEMA_DIR}/${schema}.fbs"
    DEPENDS "${PTB_SCHEMA_DIR}/${schema}.fbs" "${PTB_SCHEMA_DIR}/scalar_type.fbs"
    COMMENT "flatc ${schema}.fbs"
    VERBATIM)
  list(APPEND PTB_GENERATED_HEADERS "${out}")
endforeach()
add_custom_target(ptb_schemas DEPENDS ${PTB_GENERATED_HEADERS})
add_library(ptb_schema_headers INTERFACE)
add_dependencies(ptb_schema_headers ptb_schemas)
target_include_directories(ptb_schema_headers INTERFACE "${PTB_GENERATED_DIR}")

# The JSON Schemas of bundle.json and of every --json document, which the man
# pages name: installed in share/ptbundle/schemas/.
file(GLOB PTB_JSON_SCHEMAS CONFIGURE_DEPENDS "${PTB_SCHEMA_DIR}/*.schema.json")
install(FILES ${PTB_JSON_SCHEMAS} DESTINATION ${CMAKE_INSTALL_DATADIR}/ptbundle/schemas)
