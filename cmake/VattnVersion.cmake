# SPDX-License-Identifier: Apache-2.0
# VATTN_VERSION, with the git revision: "0.1.0 (git 486943b)", "(git 486943b-dirty)" for a checkout
# with changes to tracked files, "(git unknown)" outside a git checkout. The header is rewritten at
# build time (every build asks git; the file changes only when the revision does), so the version
# is right after a commit without re-configuring. Sources that use VATTN_VERSION get the header as
# a forced include: vattn_uses_version(target source...).
find_package(Git QUIET)
set(VATTN_VERSION_HEADER ${PROJECT_BINARY_DIR}/generated/vattn_version.h)
add_custom_target(vattn_git_revision
  COMMAND ${CMAKE_COMMAND} -DGIT=${GIT_EXECUTABLE} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DVERSION=${PROJECT_VERSION} -DOUTPUT=${VATTN_VERSION_HEADER}
          -P ${CMAKE_CURRENT_LIST_DIR}/VattnGitRevision.cmake
  BYPRODUCTS ${VATTN_VERSION_HEADER}
  COMMENT "vattn: git revision for VATTN_VERSION"
  VERBATIM)

# The sources of `target` that use VATTN_VERSION (paths as given to the target).
function(vattn_uses_version target)
  set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY
               COMPILE_OPTIONS -include${VATTN_VERSION_HEADER})
  set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY OBJECT_DEPENDS ${VATTN_VERSION_HEADER})
  add_dependencies(${target} vattn_git_revision)
endfunction()
