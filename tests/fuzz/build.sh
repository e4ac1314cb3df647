#!/bin/sh
# tests/fuzz/build.sh: builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c)
# with clang, AddressSanitizer and UBSan: core/*/*.c compiled again with the
# same flags into a directory of its own (never mixed with the normal build's
# objects), archived, and linked into one program per harness. core is
# compiled with only the APR, apr-util, json-c, libcurl, OpenSSL and cjose
# include paths, as in the normal build. `make fuzz` runs it with configure's flags;
# by hand it asks apr-1-config, apu-1-config and pkg-config.
#
#   tests/fuzz/build.sh [OUTDIR]      (default: tests/fuzz/bin)
#
# Environment: CLANG (default clang), FUZZ_INCLUDES (one -I per core folder;
# by default every folder of core/), FUZZ_CPPFLAGS, FUZZ_LIBS, FUZZ_JOBS (2).
# Sources newer than their object (or a newer core header) are rebuilt.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=${1:-$here/bin}
cc=${CLANG:-clang}
jobs=${FUZZ_JOBS:-2}

if ! command -v "$cc" >/dev/null 2>&1; then
  echo "tests/fuzz/build.sh: $cc not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
if [ -z "${FUZZ_INCLUDES:-}" ]; then
  FUZZ_INCLUDES=$(for d in "$src"/core/*/; do printf ' -I%s' "${d%/}"; done)
fi
if [ -z "${FUZZ_CPPFLAGS:-}" ]; then
  FUZZ_CPPFLAGS="$(apr-1-config --cppflags --includes) $(apu-1-config --includes)
    $(pkg-config --cflags json-c libcurl openssl cjose)"
fi
if [ -z "${FUZZ_LIBS:-}" ]; then
  FUZZ_LIBS="$(apu-1-config --link-ld --libs) $(apr-1-config --link-ld --libs)
    $(pkg-config --libs json-c libcurl openssl cjose)"
fi

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -g -O1 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
  -Werror $SAN -D_GNU_SOURCE $FUZZ_INCLUDES $FUZZ_CPPFLAGS"
export cc out src CFLAGS

mkdir -p "$out/core"
newest_header=$(ls -t "$src"/core/*/*.h | head -n 1)

# core/*/*.c, two at a time, each object named by its source's basename
# (unique across core/); -fsanitize=fuzzer-no-link adds the coverage hooks.
# The generated schema data is left out: no harness needs the schema.
ls "$src"/core/*/*.c | grep -v '/prov_schema_data\.c$' | while read -r c; do
  o="$out/core/$(basename "$c" .c).o"
  if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ "$newest_header" -nt "$o" ]; then echo "$c"; fi
done | xargs -r -n 1 -P "$jobs" sh -c \
  'echo "  CC(fuzz) ${0#"$src"/}"; $cc $CFLAGS -fsanitize=fuzzer-no-link -c "$0" -o "$out/core/$(basename "$0" .c).o"'

rm -f "$out/libprovider-fuzz.a"
ar rcs "$out/libprovider-fuzz.a" "$out"/core/*.o

for h in "$here"/fuzz_*.c; do
  name=$(basename "$h" .c)
  echo "  LD(fuzz) $name"
  # shellcheck disable=SC2086
  $cc $CFLAGS -fsanitize=fuzzer -I"$here" "$h" -o "$out/$name" \
    "$out/libprovider-fuzz.a" $FUZZ_LIBS
done
