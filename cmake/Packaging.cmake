# Installation layout and the Debian package (cpack -G DEB).
#
#   cmake --install build [--prefix /usr]     # default prefix: /usr/local
#   (cd build && cpack -G DEB)                # build/plugfs_<version>_<arch>.deb
#
# Installed (paths relative to the prefix, and /var/lib/plugfs):
#   bin/plugfs, bin/plugfs-demo-plugin
#   share/man/man8/plugfs.8.gz, share/man/man5/plugfs.ini.5.gz,
#   share/man/man1/plugfs-demo-plugin.1.gz
#   lib/systemd/system/plugfs.service      (ExecStart= points at bin/plugfs)
#   share/bash-completion/completions/plugfs
#   share/doc/plugfs/examples/plugfs.ini   (every key at its default, explained;
#                                           copy to /etc/plugfs/plugfs.ini to edit)
#   share/doc/plugfs/{README.md,protocol.md,examples/...}
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

install(FILES contrib/plugfs.bash-completion DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions
  RENAME plugfs)
install(FILES contrib/plugfs.ini contrib/nomad/csi-node-plugin.nomad.hcl
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(PROGRAMS contrib/docker-consumer.sh DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The default [state] path is /var/lib/plugfs/state.db: its directory comes
# with the package (the unit's StateDirectory= also makes it), so that
# `plugfs mount' works by hand too.  postrm removes it on purge.
install(DIRECTORY DESTINATION /var/lib/plugfs
  DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/protocol.md)
  install(FILES docs/protocol.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

# --- cpack -G DEB ---
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME plugfs)
set(CPACK_PACKAGE_VENDOR "plugfs")
set(CPACK_PACKAGE_CONTACT "plugfs maintainers <plugfs@localhost>")
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
# libc6) come from dpkg-shlibdeps; fuse3 brings fusermount3, which the unit's
# ExecStopPost= and the stale-mount recovery use.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
  ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
  ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
