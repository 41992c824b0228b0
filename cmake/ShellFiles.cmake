# What a shell user expects beside the `normlab` command, made at build time from the built
# binary (so they list exactly its subcommands, flags and registries) and installed with it:
#   share/man/man1/normlab.1                    the man page: help2man on `normlab --help`, with a
#                                               section per subcommand (cmake/ManInclude.cmake);
#                                               built by default only when help2man is found
#   share/bash-completion/completions/normlab   `normlab completion bash`
#   share/zsh/vendor-completions/_normlab       `normlab completion zsh`
# Included by cmake/Install.cmake. Not when cross-compiling: the binary cannot run on the build host.
if(CMAKE_CROSSCOMPILING)
  message(STATUS "normlab: cross-compiling: no man page or completion scripts (they run the built normlab)")
  return()
endif()

set(NORMLAB_SHELL_DIR ${PROJECT_BINARY_DIR}/share)
# The binary runs at build time; a sanitizer build's leak report must not fail the build.
set(_normlab_run ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:normlab>)

# The completion scripts (target normlab_completions, part of the default build).
set(NORMLAB_BASH_COMPLETION ${NORMLAB_SHELL_DIR}/bash-completion/completions/normlab)
set(NORMLAB_ZSH_COMPLETION ${NORMLAB_SHELL_DIR}/zsh/vendor-completions/_normlab)
foreach(shell bash zsh)
  if(shell STREQUAL "bash")
    set(_out ${NORMLAB_BASH_COMPLETION})
  else()
    set(_out ${NORMLAB_ZSH_COMPLETION})
  endif()
  get_filename_component(_dir ${_out} DIRECTORY)
  add_custom_command(OUTPUT ${_out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}
      COMMAND ${CMAKE_COMMAND} -DOUT=${_out} "-DCOMMAND=${_normlab_run};completion;${shell}"
              -P ${PROJECT_SOURCE_DIR}/cmake/CommandOutput.cmake
      DEPENDS normlab ${PROJECT_SOURCE_DIR}/cmake/CommandOutput.cmake
      COMMENT "normlab completion ${shell}" VERBATIM)
endforeach()
add_custom_target(normlab_completions ALL DEPENDS ${NORMLAB_BASH_COMPLETION} ${NORMLAB_ZSH_COMPLETION})
install(FILES ${NORMLAB_BASH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${NORMLAB_ZSH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

# The man page (target normlab_man). help2man reads `normlab --help` (the usage, the options and
# the subcommands' one-line list); the version is the project's (`normlab --version` adds the git
# commit, which would make the page change with every commit).
find_program(NORMLAB_HELP2MAN help2man)
if(NORMLAB_HELP2MAN)
  set(NORMLAB_MAN_PAGE ${NORMLAB_SHELL_DIR}/man/man1/normlab.1)
  set(_h2m ${PROJECT_BINARY_DIR}/normlab.h2m)
  add_custom_command(OUTPUT ${NORMLAB_MAN_PAGE}
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
              ${CMAKE_COMMAND} -DNORMLAB=$<TARGET_FILE:normlab> -DOUT=${_h2m} -P ${PROJECT_SOURCE_DIR}/cmake/ManInclude.cmake
      COMMAND ${CMAKE_COMMAND} -E make_directory ${NORMLAB_SHELL_DIR}/man/man1
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
              ${NORMLAB_HELP2MAN} --no-info --no-discard-stderr --section 1
              "--name=train small models on a CPU and see how BatchNorm and LayerNorm behave"
              "--version-string=normlab ${PROJECT_VERSION}" --include ${_h2m} --output ${NORMLAB_MAN_PAGE}
              $<TARGET_FILE:normlab>
      DEPENDS normlab ${PROJECT_SOURCE_DIR}/cmake/ManInclude.cmake
      COMMENT "help2man: normlab.1" VERBATIM)
  add_custom_target(normlab_man ALL DEPENDS ${NORMLAB_MAN_PAGE})
  install(FILES ${NORMLAB_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "normlab: help2man not found: no man page (apt-get install help2man, or scripts/install-deps.sh)")
endif()
