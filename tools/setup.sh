#!/bin/sh
# Install the Debian 12 packages gpuplan needs to build and test.
# As root: installs what is missing.  Otherwise: prints the apt-get line.
#   tools/setup.sh [--test]   (--test adds what the test suites need)
set -eu
pkgs="cmake make gcc g++ pkg-config libsqlite3-dev libmicrohttpd-dev"
if [ "${1:-}" = "--test" ]; then
  pkgs="$pkgs libcmocka-dev python3 binutils clang libclang-rt-14-dev"
  pkgs="$pkgs python3-dev python3-pytest python3-pandas python3-pip python3-setuptools python3-wheel"
  pkgs="$pkgs python3-distributed python3-nbclient python3-nbformat python3-ipykernel python3-matplotlib python3-matplotlib-inline"
  pkgs="$pkgs python3-torch python3-torchvision"
  pkgs="$pkgs lua5.4 liblua5.4-dev lua5.1 liblua5.1-0-dev luajit libluajit-5.1-dev lua-busted lua-dkjson luarocks valgrind prometheus"
  pkgs="$pkgs chromium"  # the browser test of replay --html (tests/browser/)
fi
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "setup: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "setup: missing Debian packages. Run as root:" >&2
  echo "  apt-get update && apt-get install -y$missing" >&2
  exit 1
fi
