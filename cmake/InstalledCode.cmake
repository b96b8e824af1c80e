# What the installed targets compile (issue 35): the installed code is
# built only from installed code, never from the tests' folders. Included by
# the top CMakeLists.txt once every target is defined.
#
# kctx_installed_code(<list file> <target>...): writes (at generate time,
# so that generator expressions are evaluated) one line per source file and
# per include directory of each target and of every target it links,
# transitively (static, shared and object libraries, $<TARGET_OBJECTS:...>
# included; imported targets, the system's, are not followed):
#
#   <target> source <path>
#   <target> include <path>
#
# The ctest test cli_tool_links_no_test_code (tests/cli/CMakeLists.txt,
# check_installed_code.cmake) fails when a path lies in a folder named
# tests (tests/ or a platform's tests/).
function(kctx_installed_code file)
  set(todo ${ARGN})
  set(seen "")
  set(content "")
  list(LENGTH todo n)
  while(n GREATER 0)
    list(POP_FRONT todo t)
    list(LENGTH todo n)
    if(NOT TARGET ${t})
      continue()
    endif()
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      set(t ${aliased})
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(type ${t} TYPE)
    set(deps "")
    get_target_property(links ${t} INTERFACE_LINK_LIBRARIES)
    if(links)
      list(APPEND deps ${links})
    endif()
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${t} LINK_LIBRARIES)
      if(links)
        list(APPEND deps ${links})
      endif()
      get_target_property(srcdir ${t} SOURCE_DIR)
      get_target_property(bindir ${t} BINARY_DIR)
      get_target_property(sources ${t} SOURCES)
      if(NOT sources)
        set(sources "")
      endif()
      foreach(s IN LISTS sources)
        if(s MATCHES "^\\$<TARGET_OBJECTS:([^>]+)>$")
          list(APPEND deps ${CMAKE_MATCH_1})
          continue()
        endif()
        if(NOT s MATCHES "^\\$<" AND NOT IS_ABSOLUTE "${s}")
          if(EXISTS ${srcdir}/${s})
            set(s ${srcdir}/${s})
          else()
            set(s ${bindir}/${s}) # generated
          endif()
        endif()
        string(APPEND content "${t} source ${s}\n")
      endforeach()
      # With the include directories its links bring (transitive usage
      # requirements).
      string(APPEND content
        "${t} include $<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,\n${t} include >\n")
    else()
      string(APPEND content
        "${t} include $<JOIN:$<TARGET_PROPERTY:${t},INTERFACE_INCLUDE_DIRECTORIES>,\n${t} include >\n")
    endif()
    # Link items are target names, possibly inside generator expressions
    # ($<LINK_LIBRARY:WHOLE_ARCHIVE,kctx_image>, $<LINK_ONLY:...>).
    foreach(d IN LISTS deps)
      string(REGEX MATCHALL "[A-Za-z0-9_.+:-]+" words "${d}")
      foreach(w IN LISTS words)
        if(TARGET ${w})
          list(APPEND todo ${w})
        endif()
      endforeach()
    endforeach()
    list(LENGTH todo n)
  endwhile()
  file(GENERATE OUTPUT ${file} CONTENT "${content}")
endfunction()
