# shellcheck shell=bash
# Starts a throwaway PostgreSQL for Trove's tests. Meant to be SOURCED (by
# scripts/test.sh, or by hand in a shell); sourcing it starts the server and
# fails (returns non-zero) if it cannot:
#
#     source scripts/testenv/postgres.sh   # under set -e, a failure stops here
#     trap testenv_postgres_stop EXIT      # or call it from your own cleanup
#
# Set TESTENV_POSTGRES_NO_START=1 before sourcing to only define the
# functions; then call testenv_postgres_start yourself.
#
# testenv_postgres_start runs initdb and pg_ctl from the PostgreSQL binaries
# on the machine (the PATH, else the newest /usr/lib/postgresql/*/bin) in a
# new temporary directory, on a free port of 127.0.0.1, with password
# (scram-sha-256) authentication over TCP. As root it runs them as the
# postgres user, which owns the directory (PostgreSQL refuses to run as
# root). The server is tuned for tests, not durability (fsync off).
#
# It exports:
#   TROVE_TEST_POSTGRES_DSN  superuser DSN of the server's postgres database;
#                            the PostgreSQL tests create their own databases
#   TROVE_TEST_PG_CTL_DATA   the data directory, to stop and restart this server
#                            by hand (pg_ctl -D "$TROVE_TEST_PG_CTL_DATA" stop|start
#                            needs no other option: port, address and socket
#                            directory are in its configuration)
#   TROVE_TEST_PG_CTL        the pg_ctl binary; the fault tests take the server
#                            binaries from its directory to start a private
#                            server of their own (package pgtest), so that
#                            stopping it cannot disturb the packages testing
#                            in parallel on this one
# and returns non-zero, with the server log on stderr, if anything fails.
# testenv_postgres_stop stops the server and deletes the directory; it is
# safe to call more than once and when start failed half-way.

_testenv_pg_log() { echo "testenv/postgres: $*" >&2; }

# _testenv_pg_bindir prints the directory holding initdb, pg_ctl and
# postgres.
_testenv_pg_bindir() {
	local initdb dir
	if initdb=$(command -v initdb 2>/dev/null) && [ -x "$(dirname "$(readlink -f "$initdb")")/pg_ctl" ]; then
		dirname "$(readlink -f "$initdb")"
		return 0
	fi
	for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -n -r); do
		if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
			echo "$dir"
			return 0
		fi
	done
	return 1
}

# _testenv_pg_as_owner runs a command as the owner of the server files.
_testenv_pg_as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# _testenv_pg_port_free reports whether nothing listens on 127.0.0.1:$1.
_testenv_pg_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

testenv_postgres_start() {
	local bindir
	if ! bindir=$(_testenv_pg_bindir); then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			_testenv_pg_log "no PostgreSQL binaries found; installing Debian's postgresql package"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2 ||
				{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2; } ||
				{ _testenv_pg_log "installing postgresql failed"; return 1; }
		fi
		bindir=$(_testenv_pg_bindir) || {
			_testenv_pg_log "initdb and pg_ctl not found on the PATH nor in /usr/lib/postgresql/*/bin: install PostgreSQL 15 or newer"
			return 1
		}
	fi
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		_testenv_pg_log "running as root but there is no postgres user to run PostgreSQL as (it refuses to run as root); create one: useradd --system postgres"
		return 1
	fi

	TESTENV_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/trove-postgres.XXXXXX") || return 1
	chmod 0755 "$TESTENV_PG_DIR"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$TESTENV_PG_DIR" || return 1
	fi
	local data="$TESTENV_PG_DIR/data" log="$TESTENV_PG_DIR/server.log"
	local password
	password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	_testenv_pg_as_owner sh -c 'umask 077 && printf "%s\n" "$1" >"$2"' sh "$password" "$TESTENV_PG_DIR/pwfile" || return 1

	if ! _testenv_pg_as_owner "$bindir/initdb" -D "$data" -U trove --pwfile="$TESTENV_PG_DIR/pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync >"$TESTENV_PG_DIR/initdb.log" 2>&1; then
		cat "$TESTENV_PG_DIR/initdb.log" >&2
		_testenv_pg_log "initdb failed (output above)"
		return 1
	fi

	local attempt port started=""
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		_testenv_pg_port_free "$port" || continue
		# Settings live in the configuration file so that a bare
		# `pg_ctl -D DATA start` (the restart test) brings back the same server.
		_testenv_pg_as_owner sh -c 'cat >"$1/postgresql.auto.conf"' sh "$data" <<-EOF
			port = $port
			listen_addresses = '127.0.0.1'
			unix_socket_directories = '$TESTENV_PG_DIR'
			max_connections = 300
			fsync = off
			synchronous_commit = off
			full_page_writes = off
			log_min_messages = warning
		EOF
		if _testenv_pg_as_owner "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 30 start >/dev/null 2>&1; then
			started=1
			break
		fi
		_testenv_pg_log "start on port $port failed (attempt $attempt); trying another port"
	done
	if [ -z "$started" ]; then
		cat "$log" >&2 2>/dev/null
		_testenv_pg_log "PostgreSQL did not start (server log above)"
		return 1
	fi

	export TROVE_TEST_POSTGRES_DSN="postgres://trove:$password@127.0.0.1:$port/postgres?sslmode=disable"
	export TROVE_TEST_PG_CTL_DATA="$data"
	export TROVE_TEST_PG_CTL="$bindir/pg_ctl"
	TESTENV_PG_BINDIR=$bindir
	_testenv_pg_log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data $data)"
}

testenv_postgres_stop() {
	[ -n "${TESTENV_PG_DIR:-}" ] || return 0
	if [ -n "${TESTENV_PG_BINDIR:-}" ] && [ -f "$TESTENV_PG_DIR/data/postmaster.pid" ]; then
		_testenv_pg_as_owner "$TESTENV_PG_BINDIR/pg_ctl" -D "$TESTENV_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$TESTENV_PG_DIR"
	unset TESTENV_PG_DIR TESTENV_PG_BINDIR TROVE_TEST_POSTGRES_DSN TROVE_TEST_PG_CTL_DATA TROVE_TEST_PG_CTL
}

if [ -z "${TESTENV_POSTGRES_NO_START:-}" ]; then
	testenv_postgres_start || return 1
fi
