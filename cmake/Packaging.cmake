# The Debian package (docs/operations.md, "Debian package"): after a build,
#   cd build && cpack -G DEB -B <outdir>
# writes <outdir>/herald_<PROJECT_VERSION>_amd64.deb with
#   /usr/bin/herald                          the binary, stripped
#   /etc/herald/herald.json                  a conffile, generated below from config/herald.json
#   /lib/systemd/system/herald.service       packaging/herald.service
#   /usr/share/man/man1/herald.1.gz          packaging/herald.1.in with .TH's date and version
#                                            filled in, gzipped here
#   /usr/share/doc/herald/copyright, changelog.gz
# and the maintainer scripts packaging/postinst, prerm, postrm (the user "herald", the state
# folder /var/lib/herald, the unit). tests/package/check_deb.sh builds, inspects, and (where no
# systemd is running) installs and runs it.

set(herald_packaging_dir "${PROJECT_SOURCE_DIR}/packaging")
set(herald_packaging_out "${PROJECT_BINARY_DIR}/packaging")

set(HERALD_DEB_MAINTAINER "herald maintainers <maintainers@users.noreply.a-seed-b95e5630.example>"
  CACHE STRING "Maintainer field of the Debian package")

# Directories the install creates are 0755 whatever the umask of the one who runs cpack.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# The man page and the changelog are gzipped at build time (gzip -n: no name or timestamp in
# the header, as dh_installman and dh_compress do), never committed compressed. Both carry the
# version and the date of this configuration (the man page's .TH as YYYY-MM-DD); both dates
# honour SOURCE_DATE_EPOCH.
string(TIMESTAMP HERALD_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
string(TIMESTAMP HERALD_MAN_DATE "%Y-%m-%d" UTC)
set(HERALD_DEB_VERSION "${PROJECT_VERSION}")
configure_file("${herald_packaging_dir}/changelog.in" "${herald_packaging_out}/changelog" @ONLY)
configure_file("${herald_packaging_dir}/herald.1.in" "${herald_packaging_out}/herald.1" @ONLY)
find_program(HERALD_GZIP gzip REQUIRED)
add_custom_command(
  OUTPUT "${herald_packaging_out}/herald.1.gz" "${herald_packaging_out}/changelog.gz"
  COMMAND "${CMAKE_COMMAND}" -E copy "${herald_packaging_out}/herald.1" "${herald_packaging_out}/herald.1.tmp"
  COMMAND "${HERALD_GZIP}" -9nf "${herald_packaging_out}/herald.1.tmp"
  COMMAND "${CMAKE_COMMAND}" -E rename "${herald_packaging_out}/herald.1.tmp.gz" "${herald_packaging_out}/herald.1.gz"
  COMMAND "${CMAKE_COMMAND}" -E copy "${herald_packaging_out}/changelog" "${herald_packaging_out}/changelog.tmp"
  COMMAND "${HERALD_GZIP}" -9nf "${herald_packaging_out}/changelog.tmp"
  COMMAND "${CMAKE_COMMAND}" -E rename "${herald_packaging_out}/changelog.tmp.gz" "${herald_packaging_out}/changelog.gz"
  DEPENDS "${herald_packaging_out}/herald.1" "${herald_packaging_out}/changelog"
  COMMENT "Compressing the man page and the changelog for the Debian package"
  VERBATIM)

# /etc/herald/herald.json is config/herald.json, the embedded default, with its database moved to
# /var/lib/herald (the unit's StateDirectory) and its header comment replaced; generated here,
# so the two never drift apart. Editing config/herald.json re-runs this at the next build. It
# fails here when config/herald.json no longer has the line or the header it rewrites.
set(herald_config_source "${PROJECT_SOURCE_DIR}/config/herald.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${herald_config_source}")
file(READ "${herald_config_source}" herald_packaged_config)
set(herald_embedded_db "\"database\": \"sqlite:var/herald.db\",")
string(FIND "${herald_packaged_config}" "${herald_embedded_db}" herald_db_at)
if(herald_db_at EQUAL -1)
  message(FATAL_ERROR "config/herald.json has no line ${herald_embedded_db}: update the "
    "packaged configuration's generation in cmake/Packaging.cmake")
endif()
string(REPLACE "${herald_embedded_db}" "\"database\": \"sqlite:/var/lib/herald/herald.db\","
  herald_packaged_config "${herald_packaged_config}")
# The embedded default's header (its leading // lines) describes the embedded default.
string(REGEX REPLACE "^(//[^\n]*\n)+" "" herald_packaged_config "${herald_packaged_config}")
if(NOT herald_packaged_config MATCHES "^{")
  message(FATAL_ERROR "config/herald.json does not start with // comment lines and then {: "
    "update the packaged configuration's generation in cmake/Packaging.cmake")
endif()
string(PREPEND herald_packaged_config [=[
// herald's configuration as the Debian package installs it (/etc/herald/herald.json, a conffile:
// your changes are kept across upgrades). It is config/herald.json of the herald source tree,
// the embedded default, with the database under /var/lib/herald (the unit's StateDirectory):
// one node, SQLite, simulated channels that always succeed, listening on 127.0.0.1:8080. This
// file replaces the embedded configuration as a whole (keys it omits take the built-in defaults
// of docs/operations.md). After editing: systemctl restart herald.
]=])
file(WRITE "${herald_packaging_out}/herald.json.tmp" "${herald_packaged_config}")
file(COPY_FILE "${herald_packaging_out}/herald.json.tmp" "${herald_packaging_out}/herald.json"
  ONLY_IF_DIFFERENT)
file(REMOVE "${herald_packaging_out}/herald.json.tmp")
add_custom_target(herald_package_files ALL
  DEPENDS "${herald_packaging_out}/herald.1.gz" "${herald_packaging_out}/changelog.gz")

# Relative destinations are under CPACK_PACKAGING_INSTALL_PREFIX (/usr); /etc and /lib are
# absolute, which the DEB generator supports.
install(TARGETS herald RUNTIME DESTINATION bin)
install(FILES "${herald_packaging_out}/herald.json" DESTINATION /etc/herald)
install(FILES "${herald_packaging_dir}/herald.service" DESTINATION /lib/systemd/system)
install(FILES "${herald_packaging_out}/herald.1.gz" DESTINATION share/man/man1)
install(FILES "${herald_packaging_dir}/copyright" "${herald_packaging_out}/changelog.gz"
  DESTINATION share/doc/herald)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME herald)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${HERALD_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "notification service sending each message once per user and channel")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Debug information stays in build/herald; the package carries the stripped binary.
set(CPACK_STRIP_FILES ON)
# /etc and /lib destinations are absolute on purpose.
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # herald_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${HERALD_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The synopsis line is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "herald takes business events over HTTP, splits each into one task per channel\n\
(SMS, WeChat, app push, e-mail, in-app, webhooks) and delivers each user's\n\
message on each channel once: never twice, never zero times, through\n\
resubmissions, provider failures, crashes and restarts.\n\
.\n\
This package installs the binary, a default configuration (SQLite under\n\
/var/lib/herald, simulated channels, 127.0.0.1:8080), a hardened systemd unit\n\
and the system user herald.")
# dpkg-shlibdeps (dpkg-dev; CPack also needs `file`) computes the libraries' Depends.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
# libcurl4 only recommends ca-certificates, and without it every provider call over TLS (HTTPS:
# webhook, WeChat, Twilio, FCM, APNs; SMTP with TLS) fails its handshake. A Recommends, not a Depends: the packaged
# configuration (simulated channels, SQLite) makes no TLS connection, and a host may bring its
# CAs another way; apt installs Recommends unless told not to.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS ca-certificates)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${herald_packaging_dir}/conffiles"
  "${herald_packaging_dir}/postinst"
  "${herald_packaging_dir}/prerm"
  "${herald_packaging_dir}/postrm")
# Maintainer scripts 0755 and conffiles 0644 in the control archive, whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)
