# The header boundary (ctest -R include_boundaries): run by CTest as
#   cmake -DCC=... -DINCLUDES=a|b|... -DSOURCE_DIR=... -DWORK_DIR=... -P check_includes.cmake
#
# INCLUDES is the include path a consumer of every library sees (the public
# include directories of plugfs_common, _registry, _config, _fs, _control and
# their usage requirements).  Each header of <folder>/include/ must compile on
# its own against that path; each header beside a folder's sources is private
# to that folder and must NOT be found: a one-line file including it has to
# fail with "not found".  New headers are checked without editing this file.
set(folders common registry config fs control probe daemon cli)
string(REPLACE "|" ";" includes "${INCLUDES}")
set(flags -std=gnu11 -D_GNU_SOURCE -fsyntax-only -Wall -Werror)
foreach(dir IN LISTS includes)
  list(APPEND flags "-I${dir}")
endforeach()
file(MAKE_DIRECTORY ${WORK_DIR})

set(failures 0)
set(n_public 0)
set(n_private 0)
foreach(folder IN LISTS folders)
  file(GLOB public RELATIVE ${SOURCE_DIR}/${folder}/include ${SOURCE_DIR}/${folder}/include/*.h)
  # Private: every header of the folder outside include/, in subfolders too
  # (registry/store/store.h), by its path from the folder and by its name.
  file(GLOB_RECURSE private_paths RELATIVE ${SOURCE_DIR}/${folder} ${SOURCE_DIR}/${folder}/*.h)
  list(FILTER private_paths EXCLUDE REGEX "^include/")
  set(private "")
  foreach(h IN LISTS private_paths)
    get_filename_component(name ${h} NAME)
    list(APPEND private ${h} ${name})
  endforeach()
  list(REMOVE_DUPLICATES private)
  foreach(h IN LISTS public)
    math(EXPR n_public "${n_public} + 1")
    set(src ${WORK_DIR}/public_${folder}_${h}.c)
    file(WRITE ${src} "#include \"${h}\"\n")
    execute_process(COMMAND ${CC} ${flags} ${src} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message("FAIL: public ${folder}/include/${h} does not compile on its own:\n${err}")
      math(EXPR failures "${failures} + 1")
    endif()
  endforeach()
  foreach(h IN LISTS private)
    math(EXPR n_private "${n_private} + 1")
    string(REPLACE "/" "_" h_file "${h}")
    set(src ${WORK_DIR}/private_${folder}_${h_file}.c)
    file(WRITE ${src} "#include \"${h}\"\n")
    execute_process(COMMAND ${CC} ${flags} ${src} RESULT_VARIABLE rc ERROR_VARIABLE err)
    string(REPLACE "." "\\." h_re "${h}")
    if(rc EQUAL 0)
      message("FAIL: private ${folder}/${h} is reachable through the public include path")
      math(EXPR failures "${failures} + 1")
    elseif(NOT err MATCHES "${h_re}.*(No such file|not found)")
      message("FAIL: including private ${folder}/${h} failed, but not as not found:\n${err}")
      math(EXPR failures "${failures} + 1")
    endif()
  endforeach()
endforeach()

if(n_public EQUAL 0 OR n_private EQUAL 0)
  message(FATAL_ERROR "found ${n_public} public and ${n_private} private headers: wrong SOURCE_DIR?")
endif()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} header boundary check(s) failed")
endif()
message("ok: ${n_public} public headers compile alone, ${n_private} private headers are unreachable")
