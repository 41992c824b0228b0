# Registers every Boost.Test case of a test executable with CTest, as gtest_discover_tests does:
# after each build the executable lists its cases (--list_content) and one CTest test is added per
# case, named suite/case, run with --run_test=suite/case so that a failure names its case.
function(boost_discover_tests target)
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D EXE=$<TARGET_FILE:${target}> -D OUT=${ctest_file}
            -D WORKDIR=${CMAKE_CURRENT_BINARY_DIR}
            -P ${PROJECT_SOURCE_DIR}/cmake/BoostTestList.cmake
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${ctest_file})
endfunction()
