# add_cmocka_test(NAME SOURCES... LIBS...): one line per unit test program.
function(add_cmocka_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA ${T_LIBS})
  target_compile_definitions(${name} PRIVATE
    PLUGFS_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 120
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=STDOUT")
endfunction()
