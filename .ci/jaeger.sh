#!/usr/bin/env bash
# Builds the Jaeger binary pinned in tools/go.mod once into a cache
# directory and prints its path. CI runs:
#
#   export HARNESSX_JAEGER_BIN="$(.ci/jaeger.sh)"
#   go test -race -timeout 30m ./...
#
# The cache is ${HARNESSX_CACHE:-$HOME/.cache/harnessx}; the binary is
# jaeger-<version> in it, so bumping the version in tools/go.mod builds anew.
# A build takes several minutes and about 2 GB; later runs reuse the binary.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(awk '$1 == "github.com/jaegertracing/jaeger" && $2 ~ /^v/ { print $2; exit }
               $1 == "require" && $2 == "github.com/jaegertracing/jaeger" { print $3; exit }' tools/go.mod)"
if [[ -z "${version}" ]]; then
	echo "jaeger.sh: tools/go.mod does not require github.com/jaegertracing/jaeger" >&2
	exit 1
fi

cache="${HARNESSX_CACHE:-${HOME}/.cache/harnessx}"
bin="${cache}/jaeger-${version}"

if [[ ! -x "${bin}" ]]; then
	mkdir -p "${cache}"
	tmp="${bin}.tmp-$$"
	trap 'rm -f "${tmp}"' EXIT
	echo "jaeger.sh: building Jaeger ${version} into ${bin} (several minutes)" >&2
	(cd tools && go build -o "${tmp}" github.com/jaegertracing/jaeger/cmd/jaeger) >&2
	mv -f "${tmp}" "${bin}"
fi

echo "${bin}"
