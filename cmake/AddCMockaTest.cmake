# add_cmocka_test(NAME SOURCES... LIBS... [INTERNAL FOLDER...]): one line
# per unit test program.  INTERNAL: a test of one module's internals also
# sees the private headers of FOLDER (relative to the source root, e.g.
# registry); the only way a test gets them (tests/unit/CMakeLists.txt).
function(add_cmocka_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;INTERNAL" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA ${T_LIBS})
  foreach(folder IN LISTS T_INTERNAL)
    if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${folder})
      message(FATAL_ERROR "add_cmocka_test(${name}): INTERNAL ${folder} is not a folder of the source tree")
    endif()
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/${folder})
  endforeach()
  target_compile_definitions(${name} PRIVATE
    PLUGFS_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures")
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT 120
    ENVIRONMENT "CMOCKA_MESSAGE_OUTPUT=STDOUT")
endfunction()
