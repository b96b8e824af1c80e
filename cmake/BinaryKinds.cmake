# BinaryKinds.cmake — the device binary kinds ("variant kinds" of the
# callable image, docs/image-format.md), declared once by the platforms that
# run them (docs/platforms.md, "How to add a platform").
#
# A platform names the kinds it loads in its declaration (cmake/Platforms.cmake):
#
#   kctx_declare_platform(<name> ...
#     BINARY_KINDS <kind>=<number>:<format minor>...)
#
# e.g. `BINARY_KINDS cuda_fatbin=3:0 cuda_cubin=4:0 cuda_ptx=5:0`. The number
# is the kind's value in an image's variant entry and in the public enum
# kctx_variant_kind (KCTX_VARIANT_<KIND>, include/kctx/image.h): file format
# and ABI, so it is written in the declaration, never derived from an order,
# and never reused. The minor is the lowest format minor (1.<minor>) that
# has the kind. Every platform declares its kinds whether this build has it
# or not (the kinds are the format's, not the build's); a platform that
# loads another platform's kind (tests/platform_fake: the sim's) declares
# none.
#
# kctx_binary_kinds_generate() checks the declarations at configure time
# (names [a-z][a-z0-9_]* and unique, numbers 1..2147483647 and unique: the
# image's field is a u32 whose 0 is no kind, and the enum's constants are
# ints) and writes kctx_gen_binary_kinds.h, from which the validator's
# minor table (src/image/layout.h) and `kctx pack`'s kind names
# (tools/kctx/manifest.c) are made, and against which src/image checks the
# public enum at compile time. tests/image/check_binary_kinds.py checks that
# the public enum, Python's VariantKind (python/kctx/image.py) and
# docs/image-format.md's table have exactly these kinds and numbers.

# kctx_binary_kinds_collect(<var> <platform>...): the declared kinds of those
# platforms, as "<number>;<name>;<minor>;<platform>" records joined with "|"
# in number order; a malformed or clashing declaration is a configure error.
function(kctx_binary_kinds_collect var)
  set(keyed "")
  set(seen_names "")
  set(seen_numbers "")
  foreach(p IN LISTS ARGN)
    get_property(kinds GLOBAL PROPERTY KCTX_PLATFORM_${p}_BINARY_KINDS)
    foreach(k IN LISTS kinds)
      if(NOT k MATCHES "^([a-z][a-z0-9_]*)=([0-9]+):([0-9]+)$")
        message(FATAL_ERROR "platform ${p}: BINARY_KINDS entry '${k}' is not <name>=<number>:<format minor> "
                            "(a name [a-z][a-z0-9_]*, e.g. sim_elf=1:0)")
      endif()
      set(name ${CMAKE_MATCH_1})
      set(number ${CMAKE_MATCH_2})
      set(minor ${CMAKE_MATCH_3})
      string(LENGTH "${number}" digits)
      if(number MATCHES "^0" OR digits GREATER 10 OR number GREATER 2147483647)
        message(FATAL_ERROR "platform ${p}: binary kind ${name}'s number ${number} is not 1..2147483647, "
                            "written without leading zeros (the image's u32 field, where 0 is no kind; "
                            "the public enum's constants are ints)")
      endif()
      string(LENGTH "${minor}" digits)
      if(minor MATCHES "^0." OR digits GREATER 5 OR minor GREATER 65535)
        message(FATAL_ERROR "platform ${p}: binary kind ${name}'s format minor ${minor} is not 0..65535, "
                            "written without leading zeros (the header's u16 version_minor)")
      endif()
      foreach(prev IN LISTS seen_names)
        if(prev MATCHES "^${name}=(.*)$")
          message(FATAL_ERROR "binary kind ${name} is declared twice: by platform ${CMAKE_MATCH_1} and by "
                              "platform ${p} (a kind is declared once, by the platform that runs it)")
        endif()
      endforeach()
      foreach(prev IN LISTS seen_numbers)
        if(prev MATCHES "^${number}=(.*)$")
          message(FATAL_ERROR "binary kind number ${number} is declared twice: ${CMAKE_MATCH_1} and "
                              "${name} (platform ${p}); the numbers are file format and public ABI: "
                              "a new kind takes a number no kind ever had")
        endif()
      endforeach()
      list(APPEND seen_names "${name}=${p}")
      list(APPEND seen_numbers "${number}=${name} (platform ${p})")
      string(LENGTH "${number}" digits)
      math(EXPR pad "10 - ${digits}")
      string(REPEAT "0" ${pad} zeros)
      list(APPEND keyed "${zeros}${number}|${number}|${name}|${minor}|${p}")
    endforeach()
  endforeach()
  list(SORT keyed)
  set(out "")
  foreach(k IN LISTS keyed)
    string(SUBSTRING "${k}" 11 -1 k) # less the sort key (10 digits and "|")
    list(APPEND out "${k}")
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# kctx_binary_kinds_generate(<out_dir> <platform>...): <out_dir>/kctx_gen_binary_kinds.h
# from those platforms' BINARY_KINDS (every platform known, built or not),
# rewritten only when its text changes:
#   KCTX_GEN_BINARY_KINDS(X): X(name, NAME, number, minor), in number order:
#   the declared name (`kctx pack`'s manifest name), the same in upper case
#   (the public enum's KCTX_VARIANT_<NAME>), the number, the format minor.
function(kctx_binary_kinds_generate out_dir)
  kctx_binary_kinds_collect(kinds ${ARGN})
  set(text "/* Generated by cmake/BinaryKinds.cmake from the platforms' BINARY_KINDS: do not edit. */\n")
  string(APPEND text "#ifndef KCTX_GEN_BINARY_KINDS_H\n#define KCTX_GEN_BINARY_KINDS_H\n\n")
  string(APPEND text "/* X(name, NAME, number, format minor), in number order. Declared by:\n")
  set(list "#define KCTX_GEN_BINARY_KINDS(X)")
  foreach(k IN LISTS kinds)
    string(REPLACE "|" ";" k "${k}")
    list(GET k 0 number)
    list(GET k 1 name)
    list(GET k 2 minor)
    list(GET k 3 platform)
    string(TOUPPER "${name}" upper)
    string(APPEND text " *   ${name}: ${platform}\n")
    string(APPEND list " \\\n    X(${name}, ${upper}, ${number}, ${minor})")
  endforeach()
  string(APPEND text " */\n${list}\n\n#endif\n")
  set(path ${out_dir}/kctx_gen_binary_kinds.h)
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL "${text}")
    file(WRITE ${path} "${text}")
  endif()
endfunction()
