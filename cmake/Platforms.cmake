# Platforms.cmake — one declaration per platform (docs/platforms.md, "How to
# add a platform").
#
# A platform is a folder: platform/<name>/ with a platform.cmake that calls
# kctx_declare_platform() once. That call is the only place the platform's
# name is written for the build: the registry (which platforms libkctx
# knows, built or not, and why not), the conformance suite's framework
# drivers, its runs and its expected-N/A list, `kctx platforms` and
# `kctx bench --platform` are all generated from the declarations by
# kctx_platforms_generate() below. No run-time registration exists.
#
#   kctx_declare_platform(<name>
#     ORDER <n>                  listing order (sim 10, opencl 20, cuda 30, ...)
#     BUILT <bool>               whether this build has it (the file decides: headers found, option)
#     NOT_BUILT <reason>         when not built: why ("not built into this library: ...")
#     ENTRY <symbol>             const kctx_platform_entry *<symbol>(void), in its adapter
#     SOURCES <file>...          its part of libkctx (relative to its folder or absolute)
#     INCLUDES <dir>...          include directories for libkctx's platform sources
#     LINK <lib>...              libraries libkctx links for it
#     NOT_BUILT_SOURCES <file>...  compiled into libkctx when not built (its public API's
#                                refusals: kctx__svc_not_built, services.h)
#     FW_DRIVERS <name>=<fn>...  the conformance framework drivers (fw.h); the first is the
#                                platform's own; <fn> returns const fw_driver *
#     FW_SOURCES <file>...       their sources (built into kctx_conformance_suite)
#     FW_INCLUDES <dir>...       include directories for them
#     EXPECTED_NA <file>         rows of the expected-N/A table (src/conformance/expected_na.c)
#     CONFORMANCE <strategy>:<suffix>...   the conformance runs (ctest conformance_<probe><suffix>)
#     CONFORMANCE_IF <target>    only when this target exists (e.g. a driver double)
#     CONFORMANCE_ARGS <arg>...  extra runner arguments (generator expressions allowed)
#     CONFORMANCE_ENV <k=v>...   extra environment of those runs
#     CONFORMANCE_DEPENDS <target>...  what the runner needs built first
#     LABEL <label>              ctest label of its conformance runs (default: its name)
#     CLI_DEVICES <symbol>       `kctx platforms` device lister: int <symbol>(FILE *, const
#                                kctx_lister_json *), platform/common/device_lister.h (default:
#                                the framework driver's device_count/device_info)
#     CLI_SOURCES <file>...      sources of that lister (built into the kctx tool)
#     DEVICE_UNIT <text>         the default lister's name for a device's compute units
#     BENCH_PREFIX <prefix>      benchmarks whose name starts with it run on this platform
#                                ("" on one platform: every other benchmark)
#     BENCHMARKS <name>...       its benchmark programs (kctx_bench_<name>)
#     PUBLIC_HEADERS <file>...   its public headers, under its folder's include/ (include/kctx/<x>.h):
#                                that include/ is on libkctx's public include path; they are
#                                installed with kctx.h and checked by tests/abi (exports)
#     SUPPORT_DIRS <dir>...      what its tests and the conformance runs need built first (driver
#                                doubles, failing layers): added before the core's test folders
#     TEST_DIRS <dir>...         its test folders: added after the core's test folders
#     BENCH_DIRS <dir>...        its benchmark folders (bench/CMakeLists.txt adds them)
#     PYTHON <file>...           its modules of the Python package kctx (kctx.<file stem>)
#     BINARY_KINDS <kind>=<number>:<minor>...  the device binary kinds it runs (callable image
#                                variant kinds; declared built or not): cmake/BinaryKinds.cmake
#
# Every folder and file is relative to the platform's folder (or absolute).
# The folders of all of a build's platforms are added from one place each:
# tests/CMakeLists.txt (SUPPORT_DIRS, TEST_DIRS), bench/CMakeLists.txt
# (BENCH_DIRS); kctx_platforms_add_dirs() below.
#
# The declarations are read by including every platform/<name>/platform.cmake
# (and those of KCTX_EXTRA_PLATFORM_DIRS) in the top-level directory, before
# libkctx is defined; a platform.cmake may also define custom commands (its
# embedded device programs) and source properties there.

set(KCTX_PLATFORM_KEYS_ONE ORDER BUILT NOT_BUILT ENTRY EXPECTED_NA CONFORMANCE_IF LABEL CLI_DEVICES
                           DEVICE_UNIT BENCH_PREFIX)
set(KCTX_PLATFORM_KEYS_MANY SOURCES INCLUDES LINK NOT_BUILT_SOURCES FW_DRIVERS FW_SOURCES
                            FW_INCLUDES CONFORMANCE CONFORMANCE_ARGS CONFORMANCE_ENV
                            CONFORMANCE_DEPENDS CLI_SOURCES BENCHMARKS TEST_DIRS PUBLIC_HEADERS
                            SUPPORT_DIRS BENCH_DIRS PYTHON BINARY_KINDS)
include(${CMAKE_CURRENT_LIST_DIR}/BinaryKinds.cmake)

# Set by kctx_platforms_read for the platform.cmake being read: its folder.
function(kctx_declare_platform name)
  cmake_parse_arguments(PARSE_ARGV 1 D "" "${KCTX_PLATFORM_KEYS_ONE}" "${KCTX_PLATFORM_KEYS_MANY}")
  if(D_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kctx_declare_platform(${name}): unknown arguments: ${D_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "kctx_declare_platform: '${name}' is not a platform name ([a-z][a-z0-9_]*)")
  endif()
  get_property(known GLOBAL PROPERTY KCTX_DECLARED_PLATFORMS)
  if(name IN_LIST known)
    message(FATAL_ERROR "kctx_declare_platform: '${name}' is declared twice")
  endif()
  if(NOT DEFINED D_ORDER OR NOT DEFINED D_BUILT OR NOT D_ENTRY)
    message(FATAL_ERROR "kctx_declare_platform(${name}): ORDER, BUILT and ENTRY are required")
  endif()
  if(NOT D_BUILT AND NOT D_NOT_BUILT)
    message(FATAL_ERROR "kctx_declare_platform(${name}): a platform not built needs its NOT_BUILT reason")
  endif()
  set(dir ${KCTX_PLATFORM_DIR})
  foreach(key SOURCES NOT_BUILT_SOURCES FW_SOURCES CLI_SOURCES EXPECTED_NA PUBLIC_HEADERS SUPPORT_DIRS
              TEST_DIRS BENCH_DIRS PYTHON)
    set(abs "")
    foreach(f IN LISTS D_${key})
      if(IS_ABSOLUTE "${f}")
        list(APPEND abs "${f}")
      else()
        list(APPEND abs "${dir}/${f}")
      endif()
    endforeach()
    set(D_${key} "${abs}")
  endforeach()
  foreach(key IN LISTS KCTX_PLATFORM_KEYS_ONE KCTX_PLATFORM_KEYS_MANY)
    set_property(GLOBAL PROPERTY KCTX_PLATFORM_${name}_${key} "${D_${key}}")
  endforeach()
  set_property(GLOBAL PROPERTY KCTX_PLATFORM_${name}_DIR "${dir}")
  foreach(h IN LISTS D_PUBLIC_HEADERS)
    if(NOT h MATCHES "^${dir}/include/kctx/[a-z0-9_]+\\.h$")
      message(FATAL_ERROR "kctx_declare_platform(${name}): public header ${h} is not include/kctx/<name>.h in its folder")
    endif()
  endforeach()
  if(D_BUILT)
    set(built 1)
  else()
    set(built 0)
  endif()
  set_property(GLOBAL PROPERTY KCTX_PLATFORM_${name}_BUILT ${built})
  set_property(GLOBAL APPEND PROPERTY KCTX_DECLARED_PLATFORMS ${name})
endfunction()

# kctx_platform_get(<var> <platform> <key>): one member of a declaration.
function(kctx_platform_get var name key)
  get_property(v GLOBAL PROPERTY KCTX_PLATFORM_${name}_${key})
  set(${var} "${v}" PARENT_SCOPE)
endfunction()

# kctx_platforms_read(<dir>...): include the platform.cmake of every folder
# named (macro: a platform.cmake's variables stay visible to the caller, as
# an include's do).
macro(kctx_platforms_read)
  foreach(KCTX_PLATFORM_DIR ${ARGN})
    if(NOT EXISTS ${KCTX_PLATFORM_DIR}/platform.cmake)
      message(FATAL_ERROR "${KCTX_PLATFORM_DIR}: no platform.cmake (a platform folder declares itself there)")
    endif()
    include(${KCTX_PLATFORM_DIR}/platform.cmake)
  endforeach()
  unset(KCTX_PLATFORM_DIR)
endmacro()

# kctx_platforms_sorted(<var> [<platform>...]): the names given (default:
# every declared one) in their declared ORDER.
function(kctx_platforms_sorted var)
  set(names ${ARGN})
  if(NOT names)
    get_property(names GLOBAL PROPERTY KCTX_DECLARED_PLATFORMS)
  endif()
  set(keyed "")
  foreach(p IN LISTS names)
    kctx_platform_get(order ${p} ORDER)
    math(EXPR o "100000 + ${order}")
    list(APPEND keyed "${o}:${p}")
  endforeach()
  list(SORT keyed)
  set(out "")
  foreach(k IN LISTS keyed)
    string(REGEX REPLACE "^[0-9]+:" "" p "${k}")
    list(APPEND out ${p})
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# C string literal of a CMake string.
function(_kctx_c_string var text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${var} "\"${text}\"" PARENT_SCOPE)
endfunction()

# kctx_platforms_generate(<out_dir> <platform>...): the generated headers of
# that set of platforms (in declared order), each rewritten only when its
# text changes:
#   kctx_gen_registry.h  KCTX_GEN_PLATFORMS(X): X(name, entry-or-NULL, built, "not built reason")
#                        and the entry functions' declarations (src/platforms/registry.c)
#   kctx_gen_suite.h     KCTX_GEN_FW_DRIVERS(X): X("platform", "driver", fn), the drivers'
#                        declarations, and the expected-N/A rows' includes (src/conformance)
#   kctx_gen_tool.h      KCTX_GEN_TOOL_PLATFORMS(X): X("name", driver-or-NULL, lister-or-NULL,
#                        "device unit"), KCTX_GEN_BENCH_PLATFORMS(X): X("name", "prefix"),
#                        KCTX_GEN_BENCHMARKS(X): X("benchmark") (tools/kctx)
function(kctx_platforms_generate out_dir)
  kctx_platforms_sorted(names ${ARGN})
  set(reg "/* Generated by cmake/Platforms.cmake from the platform declarations: do not edit. */\n")
  set(reg_list "#define KCTX_GEN_PLATFORMS(X)")
  set(suite "/* Generated by cmake/Platforms.cmake from the platform declarations: do not edit. */\n")
  set(suite_list "#define KCTX_GEN_FW_DRIVERS(X)")
  set(na_list "#define KCTX_GEN_EXPECTED_NA_FILES")
  set(tool "/* Generated by cmake/Platforms.cmake from the platform declarations: do not edit. */\n")
  set(tool_list "#define KCTX_GEN_TOOL_PLATFORMS(X)")
  set(bench_list "#define KCTX_GEN_BENCH_PLATFORMS(X)")
  set(benchmarks "#define KCTX_GEN_BENCHMARKS(X)")
  foreach(p IN LISTS names)
    kctx_platform_get(built ${p} BUILT)
    kctx_platform_get(entry ${p} ENTRY)
    kctx_platform_get(why ${p} NOT_BUILT)
    if(built)
      string(APPEND reg "const struct kctx_platform_entry *${entry}(void);\n")
      _kctx_c_string(reason "")
      string(APPEND reg_list " \\\n    X(${p}, ${entry}, 1, ${reason})")
    else()
      _kctx_c_string(reason "${why}")
      string(APPEND reg_list " \\\n    X(${p}, NULL, 0, ${reason})")
    endif()
    if(NOT built)
      string(APPEND tool_list " \\\n    X(\"${p}\", NULL, NULL, \"\")")
      continue()
    endif()
    kctx_platform_get(drivers ${p} FW_DRIVERS)
    set(first "")
    foreach(d IN LISTS drivers)
      if(NOT d MATCHES "^([a-z0-9_-]+)=([A-Za-z_][A-Za-z0-9_]*)$")
        message(FATAL_ERROR "platform ${p}: FW_DRIVERS entry '${d}' is not <name>=<function>")
      endif()
      string(APPEND suite "const struct fw_driver *${CMAKE_MATCH_2}(void);\n")
      string(APPEND suite_list " \\\n    X(\"${p}\", \"${CMAKE_MATCH_1}\", ${CMAKE_MATCH_2})")
      if(NOT first)
        set(first ${CMAKE_MATCH_2})
      endif()
    endforeach()
    kctx_platform_get(na ${p} EXPECTED_NA)
    if(na)
      string(APPEND na_list " \\\n    \"${na}\"")
      string(APPEND suite "#define KCTX_GEN_HAS_NA_${p} 1\n")
    endif()
    kctx_platform_get(lister ${p} CLI_DEVICES)
    kctx_platform_get(unit ${p} DEVICE_UNIT)
    if(NOT unit)
      set(unit "compute units")
    endif()
    if(lister)
      string(APPEND tool "struct kctx_lister_json;\nint ${lister}(FILE *out, const struct kctx_lister_json *json);\n")
    else()
      set(lister NULL)
    endif()
    if(NOT first)
      set(first NULL)
    else()
      string(APPEND tool "const struct fw_driver *${first}(void);\n")
    endif()
    string(APPEND tool_list " \\\n    X(\"${p}\", ${first}, ${lister}, \"${unit}\")")
    kctx_platform_get(prefix ${p} BENCH_PREFIX)
    kctx_platform_get(benches ${p} BENCHMARKS)
    if(benches OR prefix)
      string(APPEND bench_list " \\\n    X(\"${p}\", \"${prefix}\")")
    endif()
    foreach(b IN LISTS benches)
      string(APPEND benchmarks " \\\n    X(\"${b}\")")
    endforeach()
  endforeach()
  kctx_binary_kinds_generate(${out_dir} ${names}) # kctx_gen_binary_kinds.h (cmake/BinaryKinds.cmake)
  string(APPEND reg "\n${reg_list}\n")
  string(APPEND suite "\n${suite_list}\n")
  string(APPEND tool "\n${tool_list}\n\n${bench_list}\n\n${benchmarks}\n")
  # The expected-N/A rows are one file per platform, included in order by
  # expected_na.c (each a list of rows of its table).
  set(rows "/* Generated by cmake/Platforms.cmake: every platform's expected-N/A rows. */\n")
  foreach(p IN LISTS names)
    kctx_platform_get(built ${p} BUILT)
    kctx_platform_get(na ${p} EXPECTED_NA)
    if(built AND na)
      string(APPEND rows "#include \"${na}\"\n")
    endif()
  endforeach()
  foreach(pair "kctx_gen_registry.h;reg" "kctx_gen_suite.h;suite" "kctx_gen_tool.h;tool"
               "kctx_gen_expected_na.inc;rows")
    list(GET pair 0 file)
    list(GET pair 1 v)
    set(path ${out_dir}/${file})
    set(old "")
    if(EXISTS ${path})
      file(READ ${path} old)
    endif()
    if(NOT old STREQUAL "${${v}}")
      file(WRITE ${path} "${${v}}")
    endif()
  endforeach()
endfunction()

# kctx_platforms_collect(<prefix> <platform>...): the built platforms'
# members for libkctx: <prefix>_SOURCES (their SOURCES, and the
# NOT_BUILT_SOURCES of those not built), <prefix>_INCLUDES, <prefix>_LINK.
function(kctx_platforms_collect prefix)
  kctx_platforms_sorted(names ${ARGN})
  set(src "")
  set(inc "")
  set(lnk "")
  foreach(p IN LISTS names)
    kctx_platform_get(built ${p} BUILT)
    if(built)
      kctx_platform_get(s ${p} SOURCES)
      kctx_platform_get(i ${p} INCLUDES)
      kctx_platform_get(l ${p} LINK)
      list(APPEND src ${s})
      list(APPEND inc ${i})
      list(APPEND lnk ${l})
    else()
      kctx_platform_get(s ${p} NOT_BUILT_SOURCES)
      list(APPEND src ${s})
    endif()
  endforeach()
  # a shared source several declarations list (platform/common/rt_programs_elf.cmake) once
  list(REMOVE_DUPLICATES src)
  list(REMOVE_DUPLICATES inc)
  set(${prefix}_SOURCES "${src}" PARENT_SCOPE)
  set(${prefix}_INCLUDES "${inc}" PARENT_SCOPE)
  set(${prefix}_LINK "${lnk}" PARENT_SCOPE)
endfunction()

# kctx_platforms_built(<var> <platform>...): those of them this build has.
function(kctx_platforms_built var)
  kctx_platforms_sorted(names ${ARGN})
  set(out "")
  foreach(p IN LISTS names)
    kctx_platform_get(built ${p} BUILT)
    if(built)
      list(APPEND out ${p})
    endif()
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# kctx_platforms_public_includes(<var> <platform>...): the include
# directories of those platforms' public headers (<folder>/include, for
# each one with PUBLIC_HEADERS, built or not: a platform not built still
# answers its header's functions, with UNSUPPORTED).
function(kctx_platforms_public_includes var)
  kctx_platforms_sorted(names ${ARGN})
  set(out "")
  foreach(p IN LISTS names)
    kctx_platform_get(h ${p} PUBLIC_HEADERS)
    kctx_platform_get(d ${p} DIR)
    if(h)
      list(APPEND out ${d}/include)
    endif()
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# kctx_platforms_members(<var> <key> <platform>...): the concatenation of
# that key's members over those platforms (in order).
function(kctx_platforms_members var key)
  kctx_platforms_sorted(names ${ARGN})
  set(out "")
  foreach(p IN LISTS names)
    kctx_platform_get(m ${p} ${key})
    list(APPEND out ${m})
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# kctx_platforms_add_dirs(<key> <platform>...): add_subdirectory of every
# folder those platforms declare under key (SUPPORT_DIRS, TEST_DIRS,
# BENCH_DIRS), each with a binary directory mirroring its source path.
function(kctx_platforms_add_dirs key)
  kctx_platforms_members(dirs ${key} ${ARGN})
  foreach(d IN LISTS dirs)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${d})
    if(rel MATCHES "^\\.\\./")
      string(MD5 h ${d})
      set(rel "extra-platforms/${h}")
    endif()
    add_subdirectory(${d} ${PROJECT_BINARY_DIR}/${rel})
  endforeach()
endfunction()
