#!/usr/bin/env bash
# Builds the versitygw S3 gateway (tools/versitygw: a small main over
# github.com/versity/versitygw's embedgw package, pinned in
# tools/versitygw/go.mod) once into a cache directory and prints its path.
# CI runs:
#
#   export HARNESSX_VERSITYGW_BIN="$(.ci/versitygw.sh)"
#
# The tests of extensions/spill/s3store, cmd/flightrec and examples/spill
# start it on a free loopback port. The cache is
# ${HARNESSX_CACHE:-$HOME/.cache/harnessx}; the binary is
# versitygw-<version>-<hash of tools/versitygw> in it, so bumping the version
# or changing the program builds anew. A cold build takes about 5 minutes
# on two shared cores (measured: 4m50s wall, 2m44s CPU, modules already
# downloaded); later runs reuse the binary. Progress goes to stderr; stdout
# carries only the path.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(awk '$1 == "github.com/versity/versitygw" && $2 ~ /^v/ { print $2; exit }
               $1 == "require" && $2 == "github.com/versity/versitygw" { print $3; exit }' tools/versitygw/go.mod)"
if [[ -z "${version}" ]]; then
	echo "versitygw.sh: tools/versitygw/go.mod does not require github.com/versity/versitygw" >&2
	exit 1
fi
sum="$(cat tools/versitygw/go.mod tools/versitygw/main.go | sha256sum | cut -c1-12)"

cache="${HARNESSX_CACHE:-${HOME}/.cache/harnessx}"
bin="${cache}/versitygw-${version}-${sum}"

if [[ ! -x "${bin}" ]]; then
	mkdir -p "${cache}"
	tmp="${bin}.tmp-$$"
	trap 'rm -f "${tmp}"' EXIT
	echo "versitygw.sh: building versitygw ${version} into ${bin} (about 5 minutes)" >&2
	(cd tools/versitygw && go build -o "${tmp}" .) >&2
	mv -f "${tmp}" "${bin}"
fi

echo "${bin}"
