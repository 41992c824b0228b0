#!/usr/bin/env bash
# The installed Python package, for install/consumer and install/deb: checks that SITE (a
# dist-packages folder of an install prefix or of the unpacked .deb) holds normlab, that Debian's
# python3 imports it from there, and runs examples/consumer/consumer.py with it (in SCRATCH, so no
# source folder is on the path). In a sanitizer build python3 needs the ASan runtime and libstdc++
# preloaded: NORMLAB_PYTHON_PRELOAD (set by CTest) names them.
# Usage: test-python-package.sh SITE SOURCE_DIR SCRATCH_DIR
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 SITE SOURCE_DIR SCRATCH_DIR" >&2
  exit 2
fi
site=$1 source=$2 scratch=$3
test -f "$site/normlab/__init__.py" && test -f "$site/normlab/nn/module.py"
py() {
  (cd "$scratch" && env ${NORMLAB_PYTHON_PRELOAD:+"LD_PRELOAD=$NORMLAB_PYTHON_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
     PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$@")
}
py "$source/examples/consumer/consumer.py" | tail -n 3
case "$(py -c 'import normlab; print(normlab.__file__)')" in
  "$site"/*) ;;
  *) echo "python3 imported normlab from elsewhere than $site" >&2; exit 1 ;;
esac
