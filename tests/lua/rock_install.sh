#!/bin/sh
# luarocks make of the rockspec against libgpuplan installed by CMake into a
# scratch prefix; then the installed rock answers a plan under Lua 5.4.
#   rock_install.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -eu
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# luarocks make builds in the current directory: work on a copy
mkdir -p "$work/src/bindings"
cp -R "$src/bindings/lua" "$work/src/bindings/lua"
cp -R "$src/examples" "$work/src/examples"
cd "$work/src"
luarocks --lua-version 5.4 make --tree "$work/rocks" bindings/lua/gpuplan-0.1.0-1.rockspec \
  GPUPLAN_DIR="$work/prefix" >"$work/luarocks.log" 2>&1 || { cat "$work/luarocks.log"; exit 1; }
LD_LIBRARY_PATH="$work/prefix/lib" LUA_CPATH="$work/rocks/lib/lua/5.4/?.so" \
WORK="$work" LUA_PATH="$work/rocks/share/lua/5.4/?.lua" lua5.4 -e '
  local gpuplan = require "gpuplan"
  local sched = require "gpuplan.sched"
  local cat = assert(gpuplan.open())
  local p = assert(cat:plan("llama-2-7b", "a100-40gb"))
  assert(not p.worst.fits and p.ladder[#p.ladder].fits and p.schema == "gpuplan.plan/1", p.ladder[#p.ladder].change)
  assert(package.searchpath("gpuplan", package.cpath):find(os.getenv("WORK"), 1, true))
  print("rock installed: gpuplan " .. gpuplan._VERSION)' 
