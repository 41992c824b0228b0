# Runs a command at build time and writes what it prints to a file (cmake -P): the completion
# scripts of `normlab completion bash|zsh`. A failing command fails the build, leaving no file.
#   cmake -DOUT=<file> -DCOMMAND=<program;arg;...> -P cmake/CommandOutput.cmake
if(NOT OUT OR NOT COMMAND)
  message(FATAL_ERROR "CommandOutput.cmake: expected -DOUT=<file> -DCOMMAND=<program;arg;...>")
endif()
execute_process(COMMAND ${COMMAND} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${COMMAND}: exit status ${status}: ${err}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
