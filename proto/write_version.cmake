# Writes proto/version.h at build time (not only at configure time), so an
# incremental build after a commit reports that commit. Run by the
# posewire_version target with -DSOURCE_DIR, -DINPUT, -DOUTPUT,
# -DPROJECT_VERSION and, when the configure step was given one,
# -DREVISION_OVERRIDE. configure_file leaves OUTPUT untouched when its
# content is unchanged, so nothing recompiles until HEAD moves.
if(REVISION_OVERRIDE)
  set(POSEWIRE_GIT_REVISION "${REVISION_OVERRIDE}")
else()
  # Only SOURCE_DIR's own checkout counts: sources unpacked from a tarball
  # inside some other git work tree must not report that tree's HEAD.
  execute_process(
    COMMAND git rev-parse --show-toplevel
    WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE top_level
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  file(REAL_PATH "${SOURCE_DIR}" source_dir)
  if(top_level)
    file(REAL_PATH "${top_level}" top_level)
  endif()
  if(top_level STREQUAL source_dir)
    execute_process(
      COMMAND git rev-parse --short=12 HEAD
      WORKING_DIRECTORY "${SOURCE_DIR}"
      OUTPUT_VARIABLE POSEWIRE_GIT_REVISION
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(NOT POSEWIRE_GIT_REVISION)
    set(POSEWIRE_GIT_REVISION "unknown")
  endif()
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)
