# The part of normlab's man page that help2man cannot make from `normlab --help` alone (cmake -P):
# a SUBCOMMANDS section with each subcommand's own help (`normlab help <name>`: what it does, its
# usage, every flag as a tagged paragraph), and SEE ALSO. The subcommands are those `normlab
# --help` lists, so the page follows the command table.
#   cmake -DNORMLAB=<normlab binary> -DOUT=<file.h2m> -P cmake/ManInclude.cmake
if(NOT NORMLAB OR NOT OUT)
  message(FATAL_ERROR "ManInclude.cmake: expected -DNORMLAB=<normlab binary> -DOUT=<file>")
endif()

# out = text as roff: backslashes as \e, '-' as \- (a minus, so that flags can be searched and
# copied), and \& before a '.' or a quote at the start of a line (which roff would read as a request).
function(roff_text text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  if(text MATCHES "^[.']")
    set(text "\\&${text}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The lines of a command's standard output (a failure fails the build); ';' kept as a character.
function(command_lines out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE status ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit status ${status}: ${err}")
  endif()
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# The subcommands: the lines of the "Subcommands:" list of `normlab --help` ("  train   train one ...").
command_lines(top ${NORMLAB} --help)
set(subcommands)
set(in_list OFF)
foreach(line IN LISTS top)
  if(line STREQUAL "Subcommands:")
    set(in_list ON)
  elseif(in_list AND line MATCHES "^  ([a-z][a-z0-9-]*)( |$)")
    list(APPEND subcommands ${CMAKE_MATCH_1})
  elseif(in_list AND NOT line MATCHES "^ ")
    set(in_list OFF)
  endif()
endforeach()
if(NOT subcommands)
  message(FATAL_ERROR "ManInclude.cmake: `${NORMLAB} --help` lists no subcommands")
endif()

set(page "[SUBCOMMANDS]\n")
string(APPEND page "Each subcommand has flags of its own, which \\fBnormlab help\\fR \\fISUBCOMMAND\\fR "
                   "(or \\fBnormlab\\fR \\fISUBCOMMAND\\fR \\fB\\-\\-help\\fR) prints.\n")
foreach(sub IN LISTS subcommands)
  string(APPEND page ".SS \"normlab ${sub}\"\n")
  command_lines(help ${NORMLAB} help ${sub})
  set(first ON)
  foreach(line IN LISTS help)
    if(line STREQUAL "")
      continue()
    elseif(line MATCHES "^  ([^ ].*)$")
      # A flag or positional: "  --norm TEXT   the norm ..." or "  --missing TEXT:{...}" alone,
      # its description on the next lines.
      set(item "${CMAKE_MATCH_1}")
      set(description "")
      if(item MATCHES "^([^ ]+( [^ ]+)*)  +(.*)$")
        set(item "${CMAKE_MATCH_1}")
        set(description "${CMAKE_MATCH_3}")
      endif()
      roff_text("${item}" item)
      roff_text("${description}" description)
      string(REGEX REPLACE "^([^ ]+)" "\\\\fB\\1\\\\fR" item "${item}")
      string(APPEND page ".TP\n${item}\n")
      if(NOT description STREQUAL "")
        string(APPEND page "${description}\n")
      endif()
    elseif(line MATCHES "^   +(.*)$")  # a description's line
      roff_text("${CMAKE_MATCH_1}" text)
      string(APPEND page "${text}\n")
    elseif(line MATCHES "^Usage: (.*)$")
      roff_text("${CMAKE_MATCH_1}" text)
      string(APPEND page ".PP\nUsage: \\fB${text}\\fR\n")
    elseif(line MATCHES "^[A-Z][a-z]*:$")  # "Options:", "Positionals:"
      string(APPEND page ".PP\n${line}\n")
    else()  # the summary line, a footer
      roff_text("${line}" text)
      string(APPEND page ".PP\n${text}\n")
    endif()
  endforeach()
endforeach()
string(APPEND page "[SEE ALSO]\n"
                   "\\fBnormlab completion bash\\fR and \\fBnormlab completion zsh\\fR print completion scripts "
                   "for the shells; "
                   "the README and docs/ of the normlab sources describe the studies, the data formats and "
                   "the checkpoints.\n")
file(WRITE ${OUT} "${page}")
