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
# ThreadSanitizer (contrib/test.sh runs a few daemon scenarios under it).
# TSan and ASan cannot share a process: the two options exclude each other.
option(PLUGFS_TSAN "Build with ThreadSanitizer (not with PLUGFS_SANITIZE)" OFF)
if(PLUGFS_TSAN)
  if(PLUGFS_SANITIZE)
    message(FATAL_ERROR "PLUGFS_TSAN and PLUGFS_SANITIZE exclude each other: pick one")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Hardening, as dpkg-buildflags gives it with hardening=+all on Debian 12:
# stack protector, format checks, _FORTIFY_SOURCE=2 (it needs the optimiser:
# not in Debug builds), PIE, and a read-only GOT bound at start (relro,
# bindnow).  On by default, so the package and every release build get it.
option(PLUGFS_HARDENING "Build with the hardening flags of dpkg-buildflags" ON)
if(PLUGFS_HARDENING)
  include(CheckPIESupported)
  check_pie_supported()
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  add_compile_options(-fstack-protector-strong -Wformat -Werror=format-security
    "$<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE;-D_FORTIFY_SOURCE=2>")
  add_link_options(-Wl,-z,relro -Wl,-z,now)
endif()
