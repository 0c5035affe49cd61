# Writes server/transport/version.h at build time (not only at configure time), so an
# incremental build after a commit reports that commit. Run by the
# posewire_version target with -DSOURCE_DIR, -DINPUT, -DOUTPUT,
# -DPROJECT_VERSION and, when the configure step was given one,
# -DREVISION_OVERRIDE. configure_file leaves OUTPUT untouched when its
# content is unchanged, so nothing recompiles until HEAD moves.
if(REVISION_OVERRIDE)
  set(POSEWIRE_GIT_REVISION "${REVISION_OVERRIDE}")
else()
  execute_process(
    COMMAND git rev-parse --short=12 HEAD
    WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE POSEWIRE_GIT_REVISION
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT POSEWIRE_GIT_REVISION)
    set(POSEWIRE_GIT_REVISION "unknown")
  endif()
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)
