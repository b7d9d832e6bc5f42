#!/bin/sh
# Copy the gstat C library into src/gstat so that the package compiles it
# itself (no installed libgstat needed) and R CMD build makes a self-contained
# tarball. Run from the package root (bindings/r). The sources compiled are
# exactly CMake's GSTAT_SOURCES list (the CUDA module and the CLI are not R's).
# It also writes src/Makevars (from tools/Makevars.in with that object list),
# which the tarball ships: the tarball needs no configure script.
# Usage: tools/vendor.sh [REPO_ROOT]   (default ../..)
set -e
repo=${1:-../..}
if [ ! -f "$repo/CMakeLists.txt" ] || [ ! -f "$repo/include/gstat/core.h" ]; then
  echo "vendor.sh: no gstat repository at $repo" >&2
  exit 1
fi
dest=src/gstat
rm -rf "$dest"
mkdir -p "$dest/generated"
cp -R "$repo/include" "$dest/include"
# sources: the lines between "set(GSTAT_SOURCES" and ")" in CMakeLists.txt
sed -n '/^set(GSTAT_SOURCES/,/^)/p' "$repo/CMakeLists.txt" | sed -n 's/^ *\(src\/[^ ]*\.c\) *$/\1/p' > "$dest/SOURCES"
if [ ! -s "$dest/SOURCES" ]; then
  echo "vendor.sh: cannot read GSTAT_SOURCES from $repo/CMakeLists.txt" >&2
  exit 1
fi
# every header and source of those folders (some .c files include each other)
for d in $(sed 's|/[^/]*$||' "$dest/SOURCES" | sort -u); do
  mkdir -p "$dest/$d"
  cp "$repo/$d"/*.c "$repo/$d"/*.h "$dest/$d/" 2>/dev/null || cp "$repo/$d"/*.c "$dest/$d/"
done
# headers of parent folders included as "backend/backend.h", "core/internal.h", ...
for d in src/core src/backend; do
  mkdir -p "$dest/$d"
  cp "$repo/$d"/*.h "$dest/$d/"
done
version=$(cat "$repo/VERSION")
sed "s/@PROJECT_VERSION@/$version/" "$repo/src/core/gstat_version.h.in" > "$dest/generated/gstat_version.h"
objects=$(sed 's|^\(.*\)\.c$|gstat/\1.o|' "$dest/SOURCES" | tr '\n' ' ')
sed "s|@GSTAT_OBJECTS@|$objects|" tools/Makevars.in > src/Makevars
echo "vendor.sh: gstat $version, $(wc -l < "$dest/SOURCES") sources copied into $dest"
