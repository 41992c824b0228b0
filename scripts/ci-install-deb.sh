#!/usr/bin/env bash
# CI only (as root, on a throwaway machine): builds the Debian package (make deb), installs it into
# the system with apt-get install ./normlab_*.deb (apt pulls its Depends), runs the installed
# /usr/bin/normlab (--version, its man page, study --quick in a scratch folder) and removes the
# package again, so that the later builds on the machine find nothing of it. make test checks the
# same package without installing it (the CTest install/deb); this is the real install.
# Usage: ci-install-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [ "$(id -u)" -ne 0 ]; then
  echo "scripts/ci-install-deb.sh: installs into the system: run it as root on a throwaway machine (CI)" >&2
  exit 2
fi
make deb BUILD_DIR="$build" >/dev/null
debs=("$build"/normlab_*.deb)
deb=$(cd "$(dirname "${debs[0]}")" && pwd)/$(basename "${debs[0]}")
echo "== apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >/dev/null
trap 'DEBIAN_FRONTEND=noninteractive apt-get remove -y -q normlab >/dev/null' EXIT
test "$(command -v normlab)" = /usr/bin/normlab
normlab --version
test -f /usr/share/man/man1/normlab.1
echo "man page: /usr/share/man/man1/normlab.1"
scratch=$(mktemp -d)
(cd "$scratch" && normlab study --quick --quiet --out study && test -s study/report.md)
echo "installed normlab: study --quick wrote $(wc -l <"$scratch/study/report.md") lines of report"
rm -rf "$scratch"
