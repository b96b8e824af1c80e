# The installed code is built only from installed code (issue 35): every
# source file and include directory that the installed targets (the kctx
# tool, libkctx, libkctx_sim) and the libraries they link compile with,
# listed at configure time by kctx_installed_code (cmake/InstalledCode.cmake),
# lies outside the tests' folders (no path component named "tests", in the
# source tree or the build tree).
#
#   cmake -DLIST=<list file> -DSOURCE_DIR=<repo> -DBINARY_DIR=<build>
#         -DREQUIRE=<target>,... -P check_installed_code.cmake
#
# REQUIRE: targets the list must have (the tool and the suite's library it
# links), so that the check cannot pass on a list that missed them.
cmake_minimum_required(VERSION 3.20)
foreach(v LIST SOURCE_DIR BINARY_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_installed_code.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${LIST}")
  message(FATAL_ERROR "${LIST}: no such file (configure the build first)")
endif()
file(STRINGS "${LIST}" lines)

# A path's place under root, or "" when it is not under root.
function(place out root path)
  file(RELATIVE_PATH rel "${root}" "${path}")
  if(rel MATCHES "^\\.\\./" OR rel STREQUAL ".." OR IS_ABSOLUTE "${rel}")
    set(rel "")
  endif()
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()

set(bad "")
set(targets "")
set(nsources 0)
set(nincludes 0)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^([^ ]+) (source|include) (.*)$")
    message(FATAL_ERROR "${LIST}: cannot parse: ${line}")
  endif()
  set(target ${CMAKE_MATCH_1})
  set(kind ${CMAKE_MATCH_2})
  set(path "${CMAKE_MATCH_3}")
  if(NOT target IN_LIST targets)
    list(APPEND targets ${target})
  endif()
  if(path STREQUAL "")
    continue()
  endif()
  math(EXPR n${kind}s "${n${kind}s} + 1")
  get_filename_component(path "${path}" ABSOLUTE)
  # The build tree first: it may lie inside the source tree (build/).
  place(rel "${BINARY_DIR}" "${path}")
  if(rel STREQUAL "")
    place(rel "${SOURCE_DIR}" "${path}")
  endif()
  if("/${rel}/" MATCHES "/tests/")
    list(APPEND bad "${target}: ${kind} ${path}")
  endif()
endforeach()

string(REPLACE "," ";" REQUIRE "${REQUIRE}")
foreach(t IN LISTS REQUIRE)
  if(NOT t IN_LIST targets)
    message(FATAL_ERROR "${LIST} does not list ${t}: the list is not what this check expects")
  endif()
endforeach()
list(LENGTH targets ntargets)
list(REMOVE_DUPLICATES bad)
if(bad)
  list(LENGTH bad nbad)
  string(REPLACE ";" "\n  " shown "${bad}")
  message(FATAL_ERROR "the installed code compiles ${nbad} paths from the tests' folders "
                      "(move the code out of tests/, or stop linking it):\n  ${shown}")
endif()
message(STATUS "${ntargets} targets, ${nsources} sources, ${nincludes} include directories: "
               "none in the tests' folders")
