# The warnings of CONTRIBUTING.md; -Werror and the sanitizers are options so
# CI can turn them on while a developer's first build stays forgiving.
add_compile_options(
  -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
  -Wno-unused-parameter)
add_compile_definitions(_GNU_SOURCE)
# Test-only faults (a lookup that never answers, ...) that the integration
# tests use to put the daemon in states a real host reaches only by bad luck.
# On in builds with tests, off in the package (PLUGFS_TESTS=OFF).
option(PLUGFS_FAULTS "Build the test-only fault hooks (PLUGFS_FAULT_* variables)" ${PLUGFS_TESTS})
if(PLUGFS_FAULTS)
  add_compile_definitions(PLUGFS_FAULTS=1)
endif()
# Fuzzing: coverage instrumentation of every library for libFuzzer (the fuzz
# targets add -fsanitize=fuzzer themselves).
if(PLUGFS_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PLUGFS_FUZZ needs clang (libFuzzer): configure with CC=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(PLUGFS_WERROR)
  add_compile_options(-Werror)
endif()
if(PLUGFS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
