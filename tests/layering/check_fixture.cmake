# The layering checker's own test (CTest layering/checker_reports_forbidden_includes): runs
# cmake/CheckLayering.cmake on fixture/, a small tree whose forbidden includes end with the comment
# "// forbidden", and passes only when the checker fails and reports exactly those lines (as
# file:line), no allowed one. Run as
#   cmake -DCHECKER=<cmake/CheckLayering.cmake> -DFIXTURE=<tests/layering/fixture> -P check_fixture.cmake
cmake_minimum_required(VERSION 3.22)
get_filename_component(_checker_dir ${CHECKER} DIRECTORY)
include(${_checker_dir}/FileLines.cmake)

# The lines the checker must report: file:line of every line marked "// forbidden".
set(expected "")
file(GLOB_RECURSE files RELATIVE ${FIXTURE} ${FIXTURE}/*)
list(SORT files)
foreach(file ${files})
  normlab_file_lines(${FIXTURE}/${file} lines)
  set(line_number 0)
  foreach(line IN LISTS lines)
    math(EXPR line_number "${line_number} + 1")
    if(line MATCHES "// forbidden")
      list(APPEND expected "${file}:${line_number}")
    endif()
  endforeach()
endforeach()
list(SORT expected)
list(LENGTH expected n_expected)
if(n_expected EQUAL 0)
  message(FATAL_ERROR "no line of ${FIXTURE} is marked // forbidden: nothing to test")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${FIXTURE} -P ${CHECKER}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(output "${out}${err}")
message("${output}")

# The lines it reported: file:line at the start of an output line.
string(REPLACE ";" "<semicolon>" output_lines "${output}")
string(REPLACE "\n" ";" output_lines "${output_lines}")
set(reported "")
foreach(line IN LISTS output_lines)
  if(line MATCHES "^([^ :]+:[0-9]+): ")
    list(APPEND reported "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(SORT reported)

if(result EQUAL 0)
  message(FATAL_ERROR "the checker passed a tree with ${n_expected} forbidden includes")
endif()
if(NOT reported STREQUAL expected)
  set(missed ${expected})
  if(reported)
    list(REMOVE_ITEM missed ${reported})
  endif()
  set(extra ${reported})
  list(REMOVE_ITEM extra ${expected})
  message(FATAL_ERROR "the checker's report differs from the fixture's marks:\n"
                      "  forbidden but not reported: ${missed}\n  reported but allowed: ${extra}")
endif()
message("the checker failed on the fixture and reported its ${n_expected} forbidden includes, no other line")
