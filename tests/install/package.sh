#!/bin/sh
# Pack the build tree with CPack (.tar.gz and .deb), then use each package
# without touching the system: the .tar.gz is extracted into a scratch prefix,
# the .deb is checked with `dpkg-deb --info` and extracted with `dpkg-deb -x`
# (never installed).  From each: a C program is compiled against it with
# `pkg-config --cflags --libs gpuplan` and `gpuplan-sim` and run, and the
# packaged `gpuplan version` runs.
#   package.sh BUILD_DIR SOURCE_DIR WORK_DIR VERSION
set -eu
build=$1 src=$2 work=$3 version=$4
cc=${CC:-cc} cpack=${CPACK:-cpack}
rm -rf "$work"
mkdir -p "$work"

fail() { echo "package: $*" >&2; exit 1; }

"$cpack" --config "$build/CPackConfig.cmake" -G "TGZ;DEB" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
tgz=$(ls "$work"/out/gpuplan-"$version"-*.tar.gz 2>/dev/null | head -1)
deb=$(ls "$work"/out/gpuplan_"$version"_*.deb 2>/dev/null | head -1)
[ -f "$tgz" ] || { ls "$work/out"; fail "no gpuplan-$version-*.tar.gz"; }
[ -f "$deb" ] || { ls "$work/out"; fail "no gpuplan_${version}_*.deb"; }

# use PREFIX LABEL: build and run the consumers against the package in PREFIX.
use() {
  prefix=$1 label=$2
  pc=$(find "$prefix" -name gpuplan.pc | head -1)
  [ -n "$pc" ] || fail "$label: no gpuplan.pc"
  pcdir=$(dirname "$pc")
  libdir=$(dirname "$pcdir")
  [ -f "$pcdir/gpuplan-sim.pc" ] || fail "$label: no gpuplan-sim.pc beside gpuplan.pc"
  # Only this package's .pc files (and the system's, for sqlite3).
  PKG_CONFIG_PATH="$pcdir"
  export PKG_CONFIG_PATH
  for m in gpuplan gpuplan-sim; do
    [ "$(pkg-config --modversion $m)" = "$version" ] || fail "$label: $m version $(pkg-config --modversion $m)"
  done
  # the .pc files are relocatable: they point into the extracted tree
  case "$(pkg-config --cflags gpuplan-sim)" in
    *"$prefix"*) ;;
    *) fail "$label: gpuplan-sim cflags do not point into $prefix: $(pkg-config --cflags gpuplan-sim)" ;;
  esac
  # shellcheck disable=SC2046
  "$cc" -o "$work/consumer-$label" "$src/tests/install/consumer.c" $(pkg-config --cflags --libs gpuplan)
  # shellcheck disable=SC2046
  "$cc" -o "$work/consumer_sim-$label" "$src/tests/install/consumer_sim.c" $(pkg-config --cflags --libs gpuplan-sim)
  out=$(LD_LIBRARY_PATH="$libdir" "$work/consumer-$label") || fail "$label: consumer: $out"
  echo "$out" | grep -q "h100-sxm5-80gb 989" || fail "$label: consumer printed: $out"
  out=$(LD_LIBRARY_PATH="$libdir" "$work/consumer_sim-$label") || fail "$label: consumer_sim: $out"
  echo "$out" | grep -q "mock 1 device(s), test card, 7892 MiB free" || fail "$label: consumer_sim printed: $out"
  # the packaged command finds its library by its RPATH ($ORIGIN/../lib...)
  out=$(env -u LD_LIBRARY_PATH "$prefix/bin/gpuplan" version) || fail "$label: gpuplan version: $out"
  echo "$out" | grep -q "^gpuplan $version " || fail "$label: gpuplan version printed: $out"
  env -u LD_LIBRARY_PATH ldd "$prefix/bin/gpuplan" | grep "libgpuplan" | grep -q "$prefix" ||
    fail "$label: gpuplan does not load the packaged libgpuplan: $(ldd "$prefix/bin/gpuplan" | grep gpuplan)"
  [ -f "$prefix/share/doc/gpuplan/LICENSE" ] || fail "$label: no share/doc/gpuplan/LICENSE"
  unset PKG_CONFIG_PATH
}

# .tar.gz: one top folder, gpuplan-VERSION-SYSTEM/, relocatable.
mkdir -p "$work/tgz"
tar -xzf "$tgz" -C "$work/tgz"
top=$(ls -d "$work"/tgz/gpuplan-"$version"-*/ | head -1)
[ -d "$top" ] || fail "the .tar.gz has no gpuplan-$version-*/ folder"
use "${top%/}" tgz

# .deb: control fields, contents under /usr, then extracted (not installed).
info=$(dpkg-deb --info "$deb")
for field in "Package: gpuplan" "Version: $version" "Maintainer: gpuplan authors" "Depends: .*libsqlite3-0"; do
  echo "$info" | grep -q "^ $field" || { echo "$info"; fail ".deb control lacks '$field'"; }
done
contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/gpuplan ./usr/include/gpuplan.h ./usr/include/gpuplan/mock.h \
         "./usr/lib.*/libgpuplan.so.0" "./usr/lib.*/pkgconfig/gpuplan.pc" "./usr/lib.*/pkgconfig/gpuplan-sim.pc" \
         "./usr/lib.*/cmake/gpuplan/gpuplanConfig.cmake" ./usr/share/doc/gpuplan/LICENSE; do
  echo "$contents" | grep -q " $f\( -> .*\)\?\$" || { echo "$contents"; fail ".deb lacks $f"; }
done
dpkg-deb -x "$deb" "$work/deb"
use "$work/deb/usr" deb

echo "packages: $(basename "$tgz") and $(basename "$deb") built; from each, pkg-config consumers (gpuplan, gpuplan-sim) and gpuplan version ran"
