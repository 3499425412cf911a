#!/usr/bin/env bash
# kernel_in_cwd.sh VATTN: `--kernel NAME.so` names a file in the current folder (not a library
# searched on the system's paths). A file there that is no library must be refused as such.
set -u
dir=$(mktemp -d /tmp/vattn-kernel-cwd.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" && printf 'not a shared library\n' > mine.so
"$1" bench --kernel mine.so --prefix 4096 --batch 1 --drafts 16
