# Installation layout and the Debian package (cpack -G DEB).
#
#   cmake --install build [--prefix /usr]     # default prefix: /usr/local
#   (cd build && cpack -G DEB)                # build/plugfs_<version>_<arch>.deb
#
# Installed (paths relative to the prefix, and /var/lib/plugfs):
#   bin/plugfs
#   lib/plugfs/plugfs-demo-plugin          (the stand-in plugin of the tests and
#                                           the walkthrough: off the PATH)
#   share/man/man8/plugfs.8.gz, share/man/man5/plugfs.ini.5.gz,
#   share/man/man1/plugfs-demo-plugin.1.gz
#   lib/systemd/system/plugfs.service      (ExecStart= points at bin/plugfs)
#   share/bash-completion/completions/plugfs
#   share/zsh/vendor-completions/_plugfs   (zsh's directory for packages)
#   share/fish/vendor_completions.d/plugfs.fish
#   share/doc/plugfs/examples/plugfs.ini   (every key at its default, explained;
#                                           copy to /etc/plugfs/plugfs.ini to edit)
#   share/doc/plugfs/{README.md,protocol.md,examples/...}
#   share/doc/plugfs/copyright             (machine-readable, from LICENSE)
#   share/doc/plugfs/changelog.gz          (cmake/debian/changelog.in)
# /var/lib/plugfs is made by postinst (0700) and the unit's StateDirectory=,
# not shipped: dpkg would want it 0755.
# No file is installed into /etc: without /etc/plugfs/plugfs.ini plugfs runs
# on its built-in defaults, so a package upgrade never has a conffile to merge.

# --- man pages, compressed as Debian wants them ---
find_program(GZIP_EXECUTABLE gzip REQUIRED)
set(PLUGFS_MAN_PAGES plugfs.8 plugfs.ini.5 plugfs-demo-plugin.1)
set(_man_gz)
foreach(page IN LISTS PLUGFS_MAN_PAGES)
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/docs/${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/docs
    COMMAND ${GZIP_EXECUTABLE} -9nc ${PROJECT_SOURCE_DIR}/docs/${page} > ${PROJECT_BINARY_DIR}/docs/${page}.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/${page}
    COMMENT "Compressing ${page}" VERBATIM)
  list(APPEND _man_gz ${PROJECT_BINARY_DIR}/docs/${page}.gz)
  string(REGEX MATCH "[0-9]$" _section ${page})
  install(FILES ${PROJECT_BINARY_DIR}/docs/${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${_man_gz})

# --- systemd unit: ExecStart= follows the prefix the install runs with
# (cpack installs with /usr, `cmake --install --prefix X' with X) ---
install(CODE "
  file(READ \"${PROJECT_SOURCE_DIR}/contrib/plugfs.service\" _unit)
  string(REPLACE \"ExecStart=/usr/bin/plugfs \"
    \"ExecStart=\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/plugfs \" _unit \"\${_unit}\")
  string(REPLACE \"ExecReload=/usr/bin/plugfs \"
    \"ExecReload=\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/plugfs \" _unit \"\${_unit}\")
  string(REPLACE \"ExecStopPost=-/usr/bin/plugfs \"
    \"ExecStopPost=-\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/plugfs \" _unit \"\${_unit}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/contrib/plugfs.service\" \"\${_unit}\")
")
install(FILES ${PROJECT_BINARY_DIR}/contrib/plugfs.service DESTINATION lib/systemd/system)
# The metrics for node_exporter: not enabled by the package (an admin with
# node_exporter enables the timer).
install(FILES contrib/plugfs-metrics.service contrib/plugfs-metrics.timer
  DESTINATION lib/systemd/system)

install(FILES contrib/plugfs.bash-completion DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions
  RENAME plugfs)
install(FILES contrib/plugfs.zsh-completion DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/zsh/vendor-completions
  RENAME _plugfs)
install(FILES contrib/plugfs.fish DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/fish/vendor_completions.d)
install(FILES contrib/plugfs.ini contrib/nomad/csi-node-plugin.nomad.hcl
  contrib/nomad/csi-node-plugin-discover.nomad.hcl
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(PROGRAMS contrib/docker-consumer.sh DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The default [state] path is /var/lib/plugfs/state.db: postinst makes its
# directory (0700) so that `plugfs mount' works by hand too, the unit's
# StateDirectory= makes it as well, postrm removes it on purge.

# --- who maintains the package: the Maintainer field and the changelog ---
set(PLUGFS_MAINTAINER "plugfs maintainers <plugfs-maintainers@example.org>" CACHE STRING
  "Maintainer of the Debian package, \"Name <address>\" (set it to your own for packages you ship)")
if(NOT PLUGFS_MAINTAINER MATCHES "^[^<>]+ <[^<>@ ]+@[^<>@ ]+\\.[^<>@ ]+>$")
  message(FATAL_ERROR "PLUGFS_MAINTAINER must be `Name <user@host.domain>', got `${PLUGFS_MAINTAINER}'")
endif()
if(PLUGFS_MAINTAINER MATCHES "@(localhost|localdomain)")
  message(FATAL_ERROR "PLUGFS_MAINTAINER `${PLUGFS_MAINTAINER}': an address at localhost reaches nobody")
endif()

# --- /usr/share/doc/plugfs/copyright (DEP-5), from LICENSE ---
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _license)
if(NOT _license MATCHES "^MIT License\n\nCopyright \\(c\\) ([^\n]+)\n\n(.+)$")
  message(FATAL_ERROR "LICENSE: expected `MIT License', a blank line, `Copyright (c) ...', a blank line, the text")
endif()
set(_holder "${CMAKE_MATCH_1}")
string(STRIP "${CMAKE_MATCH_2}" _text)
string(REPLACE "\n\n" "\n.\n" _text "${_text}")
string(REPLACE "\n" "\n " _text " ${_text}")
file(WRITE ${PROJECT_BINARY_DIR}/debian/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: plugfs

Files: *
Copyright: ${_holder}
License: Expat

License: Expat
${_text}
")
install(FILES ${PROJECT_BINARY_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# --- /usr/share/doc/plugfs/changelog.gz (a native package's changelog) ---
file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in _first LIMIT_COUNT 1)
if(NOT _first MATCHES "^plugfs \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "cmake/debian/changelog.in: its first entry is `${_first}', the project is "
    "${PROJECT_VERSION}: add an entry for ${PROJECT_VERSION} on top")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${PROJECT_BINARY_DIR}/debian/changelog @ONLY)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog.gz
  COMMAND ${GZIP_EXECUTABLE} -9nc ${PROJECT_BINARY_DIR}/debian/changelog > ${PROJECT_BINARY_DIR}/debian/changelog.gz
  DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog
  COMMENT "Compressing the changelog" VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog.gz)
install(FILES ${PROJECT_BINARY_DIR}/debian/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/protocol.md)
  install(FILES docs/protocol.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

# --- cpack -G DEB ---
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME plugfs)
set(CPACK_PACKAGE_VENDOR "plugfs")
set(CPACK_PACKAGE_CONTACT "${PLUGFS_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION "plugfs keeps, per CSI plugin, an ordered list of the allocations
that serve it and publishes one stable, short path per plugin under a FUSE
mount (/run/plugfs/plugins/<type>/<name>/csi.sock) that always leads to the
socket of the most recent live allocation.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies (libfuse3-3, libsqlite3-0, libinih1, libjansson4,
# libc6) come from dpkg-shlibdeps; fuse3 brings the FUSE setup (the module,
# /dev/fuse, /etc/fuse.conf) and fusermount3 for an operator's hands (the
# daemon and `plugfs stop-post' detach with umount2 themselves, and only
# what is still mounted: no "failed to unmount" after a clean stop).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcurl4 (dpkg-shlibdeps finds it too; named for the version): the csi
# probe's HTTP/2, with nghttp2, to the plugin's socket.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3, libcurl4 (>= 7.85)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
  ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
  ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
