#!/usr/bin/env bash
# Builds normlab's API reference with Doxygen (docs/Doxyfile) into OUT/html (default build/docs):
# HTML from the /// comments of the public headers of autograd/, nn/, optim/ and data/, with
# Graphviz's class graphs when dot is installed. Doxygen's warnings are errors (WARN_AS_ERROR), so an
# undocumented public class or function, or a broken comment, fails the build.
# Usage: scripts/build-docs.sh [OUT]   (`make docs` installs Doxygen and Graphviz, then runs this;
# the docs/ CTest test runs it when CMake found doxygen, with DOXYGEN set to it)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/docs}"
doxygen="${DOXYGEN:-doxygen}"
if ! command -v "$doxygen" >/dev/null 2>&1; then
  echo "build-docs.sh: doxygen not found (make docs installs it: apt-get install doxygen graphviz)" >&2
  exit 1
fi
have_dot=NO
if command -v dot >/dev/null 2>&1; then have_dot=YES; fi
version="$(sed -n 's/^project(normlab VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/html"
cd "$root"  # docs/Doxyfile's paths are relative to the repository's root
{
  cat docs/Doxyfile
  echo "OUTPUT_DIRECTORY = \"$out\""
  echo "HAVE_DOT = $have_dot"
  echo "PROJECT_NUMBER = $version"
} | "$doxygen" -
echo "normlab: API reference in $out/html/index.html"
