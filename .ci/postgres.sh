#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the durable tests and prints its
# DSN. CI runs:
#
#   HARNESSX_POSTGRES_DSN="$(.ci/postgres.sh)"; export HARNESSX_POSTGRES_DSN
#   trap '.ci/postgres.sh stop' EXIT
#
# It installs Debian's postgresql package when initdb/pg_ctl are missing,
# creates a cluster in ${HARNESSX_PG_DIR:-${TMPDIR:-/tmp}/harnessx-pg}
# owned by the postgres user (Postgres refuses to run as root), starts it on
# 127.0.0.1 and a free port (its unix socket in the same directory, never
# the system's), with password authentication on loopback, and creates the
# database "harnessx". Run again while the server runs, it prints the same
# DSN; a directory left by a server that no longer runs is replaced.
# ".ci/postgres.sh stop" stops the server of that directory (and only it).
# Progress goes to stderr; stdout carries only the DSN.
set -euo pipefail

dir="${HARNESSX_PG_DIR:-${TMPDIR:-/tmp}/harnessx-pg}"
data="${dir}/data"
log() { echo "postgres.sh: $*" >&2; }

bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x "${d}/initdb" && -x "${d}/pg_ctl" ]]; then
			echo "${d}"
			return 0
		fi
	done
	if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
		dirname "$(command -v pg_ctl)"
		return 0
	fi
	return 1
}

# as runs a command as the cluster's owner: postgres when we are root.
as() {
	if [[ "$(id -u)" == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

if ! bin="$(bindir)"; then
	if [[ "$(id -u)" != 0 ]]; then
		log "PostgreSQL is not installed and we are not root: apt-get install postgresql"
		exit 1
	fi
	log "installing Debian's postgresql package"
	start=${SECONDS}
	(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql) >&2
	log "installed in $((SECONDS - start))s"
	bin="$(bindir)"
fi

running() { [[ -f "${data}/postmaster.pid" ]] && as "${bin}/pg_ctl" -D "${data}" status >/dev/null 2>&1; }

if [[ "${1:-}" == "stop" ]]; then
	if running; then
		as "${bin}/pg_ctl" -D "${data}" -m fast -w stop >&2
	fi
	exit 0
fi

if running && [[ -f "${dir}/dsn" ]]; then
	cat "${dir}/dsn"
	exit 0
fi

start=${SECONDS}
rm -rf "${dir}"
mkdir -p "${dir}"
chmod 700 "${dir}"
[[ "$(id -u)" == 0 ]] && chown postgres: "${dir}"
password="$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "${password}" >"${dir}/pwfile"
[[ "$(id -u)" == 0 ]] && chown postgres: "${dir}/pwfile"
chmod 600 "${dir}/pwfile"
as "${bin}/initdb" -D "${data}" -U postgres --pwfile="${dir}/pwfile" \
	--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale >"${dir}/initdb.log"

# A free loopback port: one nothing answers on; pg_ctl fails on a race and
# the next candidate is tried.
port=""
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 20000))
	if (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
		continue
	fi
	if as "${bin}/pg_ctl" -D "${data}" -l "${dir}/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p ${p} -c unix_socket_directories=${dir} -c max_connections=200" start >&2; then
		port=${p}
		break
	fi
done
if [[ -z "${port}" ]]; then
	log "the server did not start; its log:"
	cat "${dir}/server.log" >&2 || true
	exit 1
fi
as "${bin}/createdb" -h "${dir}" -p "${port}" -U postgres harnessx
dsn="postgres://postgres:${password}@127.0.0.1:${port}/harnessx?sslmode=disable"
printf '%s\n' "${dsn}" >"${dir}/dsn"
chmod 600 "${dir}/dsn"
log "started on 127.0.0.1:${port} in $((SECONDS - start))s (data ${data}; stop: .ci/postgres.sh stop)"
echo "${dsn}"
