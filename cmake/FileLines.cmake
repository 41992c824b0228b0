# normlab_file_lines(path out): the lines of a text file as a CMake list, one element per line.
# The characters CMake's lists treat specially are masked first (; [ ] \ as <semicolon>, <open>,
# <close>, <backslash>), so a line is never split or joined; the layering checker and its test use it.
function(normlab_file_lines path out)
  file(READ ${path} text)
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "[" "<open>" text "${text}")
  string(REPLACE "]" "<close>" text "${text}")
  string(REPLACE "\\" "<backslash>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()
