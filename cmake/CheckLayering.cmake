# The layering check (CTest layering/includes): reads every #include "..." line of every library's
# sources, and of examples/ and fuzz/, and fails naming the file and line of each include that
# cmake/Layering.cmake does not allow. Run as
#   cmake -DSOURCE_DIR=<tree> -P cmake/CheckLayering.cmake
# (SOURCE_DIR defaults to this repository). Only quoted includes whose first folder is one of the
# repository's (a library, tests/, bench/, examples/, fuzz/) are checked: <...> and "hwy/..." are
# other projects'.
cmake_minimum_required(VERSION 3.22)
include(${CMAKE_CURRENT_LIST_DIR}/Layering.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/FileLines.cmake)

if(NOT SOURCE_DIR)
  set(SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
set(repository_folders ${NORMLAB_LAYERS} ${NORMLAB_UNCHECKED_FOLDERS} ${NORMLAB_USER_FOLDERS})
string(REPLACE ";" ", " public_headers "${NORMLAB_PUBLIC_INTERNAL_HEADERS}")

string(REPLACE ";" " < " experiments_order "${NORMLAB_EXPERIMENTS_LAYERS}")

# Sets ${out} to the position of path's folder in NORMLAB_EXPERIMENTS_LAYERS (experiments/<folder>/...),
# -1 for a path at experiments/'s top level, -2 for a folder that is not one of them.
function(experiments_layer path out)
  if(path MATCHES "^experiments/([^/]+)/")
    list(FIND NORMLAB_EXPERIMENTS_LAYERS "${CMAKE_MATCH_1}" at)
    if(at EQUAL -1)
      set(at -2)
    endif()
  else()
    set(at -1)
  endif()
  set(${out} ${at} PARENT_SCOPE)
endfunction()

# Sets ${out} to why `file`, a source of experiments/, may not include `header` of experiments/ (its
# folders' order), or to "" when it may.
function(why_forbidden_in_experiments file header out)
  set(why "")
  experiments_layer("${file}" from)
  experiments_layer("${header}" to)
  string(REGEX MATCH "^experiments/[^/]+/" to_folder "${header}")
  if(from EQUAL -1 AND NOT file STREQUAL "experiments/main.cc")
    # Reported once per file, at its first include (see below).
  elseif(to LESS 0)
    set(why "not in a folder of experiments/ (${experiments_order})")
  elseif(from GREATER_EQUAL 0 AND to GREATER from)
    string(REGEX MATCH "^experiments/[^/]+/" from_folder "${file}")
    set(why "${from_folder} may not include ${to_folder}, a folder above it (experiments/: ${experiments_order})")
  endif()
  set(${out} "${why}" PARENT_SCOPE)
endfunction()

# Sets ${out} to why `file` (in folder `owner`) may not include `header`, or to "" when it may.
function(why_forbidden owner file header out)
  set(why "")
  string(REGEX REPLACE "/.*" "" top "${header}")
  normlab_is_internal("${header}" header_internal)
  if(NOT header MATCHES "/" OR NOT top IN_LIST repository_folders)
    # Not a path into this repository: another project's header.
  elseif(top STREQUAL owner)
    # Its own folder; but a library's public header includes only public headers, since its users
    # see only those; and experiments/'s folders are layered.
    normlab_is_internal("${file}" file_internal)
    if(owner IN_LIST NORMLAB_LAYERS AND file MATCHES "\\.h$" AND NOT file_internal AND header_internal)
      set(why "a public header of ${owner}/ includes one internal to ${owner}/, which its users cannot see")
    elseif(owner STREQUAL "experiments")
      why_forbidden_in_experiments("${file}" "${header}" why)
    endif()
  elseif(owner IN_LIST NORMLAB_USER_FOLDERS)
    if(NOT top IN_LIST NORMLAB_LAYERS)
      set(why "${owner}/ may include the libraries and its own folder, not ${top}/")
    elseif(header_internal)
      set(why "internal to ${top}/ (the public ones: ${public_headers})")
    endif()
  elseif(NOT top IN_LIST NORMLAB_MAY_INCLUDE_${owner})
    set(allowed "${NORMLAB_MAY_INCLUDE_${owner}}")
    if(allowed STREQUAL "")
      set(allowed "nothing")
    endif()
    string(REPLACE ";" ", " allowed "${allowed}")
    set(why "${owner}/ may not include ${top}/ (${owner}/ may include: ${allowed})")
  elseif(header_internal)
    set(why "internal to ${top}/ (the public ones: ${public_headers})")
  endif()
  set(${out} "${why}" PARENT_SCOPE)
endfunction()

set(violations 0)
set(files_read 0)
foreach(owner ${NORMLAB_LAYERS} ${NORMLAB_USER_FOLDERS})
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${owner}/*.h ${SOURCE_DIR}/${owner}/*.cc
       ${SOURCE_DIR}/${owner}/*.inc)
  list(SORT files)
  foreach(file ${files})
    math(EXPR files_read "${files_read} + 1")
    # experiments/'s sources live in its layer folders; only main.cc stands at its top level.
    experiments_layer("${file}" layer)
    if(owner STREQUAL "experiments" AND NOT file STREQUAL "experiments/main.cc" AND layer LESS 0)
      if(layer EQUAL -1)
        message("${file}:1: at experiments/'s top level, where only main.cc stands (its folders: ${experiments_order})")
      else()
        message("${file}:1: not in a folder of experiments/ (${experiments_order})")
      endif()
      math(EXPR violations "${violations} + 1")
    endif()
    normlab_file_lines(${SOURCE_DIR}/${file} lines)
    set(line_number 0)
    foreach(line IN LISTS lines)
      math(EXPR line_number "${line_number} + 1")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\"")
        why_forbidden(${owner} ${file} "${CMAKE_MATCH_1}" why)
        if(why)
          message("${file}:${line_number}: #include \"${CMAKE_MATCH_1}\": ${why}")
          math(EXPR violations "${violations} + 1")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the layering of cmake/Layering.cmake "
                      "(${files_read} files read in ${SOURCE_DIR})")
endif()
message("layering: ${files_read} files read, every include allowed")
