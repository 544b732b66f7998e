# plugfs_check_unique_tests(): every CTest entry of the tree has a name of
# its own.  Two add_test() of one name in two folders are two entries that
# CTest shows under one name, and a set_tests_properties() of either sets
# both (the integration test_metrics's `mount' label once reached the unit
# test of that name).  Called once, at the end of the top CMakeLists.txt.
function(_plugfs_collect_tests dir out)
  get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
  set(all "")
  foreach(t IN LISTS tests)
    list(APPEND all "${t}|${dir}")
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _plugfs_collect_tests(${sub} sub_tests)
    list(APPEND all ${sub_tests})
  endforeach()
  set(${out} "${all}" PARENT_SCOPE)
endfunction()

function(plugfs_check_unique_tests)
  _plugfs_collect_tests(${PROJECT_SOURCE_DIR} entries)
  set(seen "")
  foreach(e IN LISTS entries)
    string(REPLACE "|" ";" parts "${e}")
    list(GET parts 0 name)
    list(GET parts 1 dir)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${dir})
    if(DEFINED _plugfs_test_dir_${name})
      message(FATAL_ERROR "two CTest entries are named ${name} (in ${_plugfs_test_dir_${name}}/ "
        "and ${rel}/): give one another name")
    endif()
    set(_plugfs_test_dir_${name} ${rel})
  endforeach()
endfunction()
