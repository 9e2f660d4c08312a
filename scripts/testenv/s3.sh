# shellcheck shell=bash
# Starts a throwaway S3-compatible server (versitygw over a local directory)
# for Trove's tests. Meant to be SOURCED (by scripts/test.sh, or by hand in
# a shell); sourcing it starts the server and fails (returns non-zero) if
# it cannot:
#
#     source scripts/testenv/s3.sh   # under set -e, a failure stops here
#     trap testenv_s3_stop EXIT      # or call it from your own cleanup
#
# Set TESTENV_S3_NO_START=1 before sourcing to only define the functions;
# then call testenv_s3_start yourself.
#
# testenv_s3_start uses the versitygw binary of version $TESTENV_S3_VERSITYGW_VERSION
# in $(go env GOPATH)/bin, building it with `go install` if it is missing
# or of another version (about a minute, once per machine). It starts the
# gateway on a free port of 127.0.0.1 with its POSIX backend in a new
# temporary directory and random static root keys, and waits until it
# answers. It creates no bucket: the S3 tests create their own.
#
# It exports:
#   TROVE_TEST_S3_ENDPOINT    http://127.0.0.1:<port> (path-style addressing)
#   TROVE_TEST_S3_ACCESS_KEY  the root access key
#   TROVE_TEST_S3_SECRET_KEY  the root secret key
#   TROVE_TEST_S3_REGION      the gateway's region
# and returns non-zero, with the gateway's log on stderr, if anything
# fails. testenv_s3_stop stops the gateway and deletes the directory; it is
# safe to call more than once and when start failed half-way.

: "${TESTENV_S3_VERSITYGW_VERSION:=v1.8.0}"

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

_testenv_s3_log() { echo "testenv/s3: $*" >&2; }

# _testenv_s3_port_free reports whether nothing listens on 127.0.0.1:$1.
_testenv_s3_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _testenv_s3_versitygw_wanted BIN reports whether BIN was built from
# versitygw $TESTENV_S3_VERSITYGW_VERSION. The build info is read whole
# before it is matched: grep -q exiting early would fail go's next write
# (SIGPIPE) and, under pipefail, the check, forcing a needless rebuild.
_testenv_s3_versitygw_wanted() {
	local info
	info=$(go version -m "$1" 2>/dev/null) || return 1
	grep -qE "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$TESTENV_S3_VERSITYGW_VERSION([[:space:]]|$)" <<<"$info"
}

# _testenv_s3_versitygw_compile OUT builds versitygw into OUT.
_testenv_s3_versitygw_compile() {
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/trove-versitygw.XXXXXX") || return 1
	(cd / && GOBIN="$tmp" go install "github.com/versity/versitygw/cmd/versitygw@$TESTENV_S3_VERSITYGW_VERSION") &&
		mv "$tmp/versitygw" "$1"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

# _testenv_s3_versitygw prints the path of a versitygw binary of the wanted
# version, building it first if needed.
_testenv_s3_versitygw() {
	testenv_gotool "versitygw $TESTENV_S3_VERSITYGW_VERSION" versitygw \
		_testenv_s3_versitygw_wanted _testenv_s3_versitygw_compile "about a minute"
}

# _testenv_s3_answers reports whether an S3 server answers HTTP on port $1:
# any response (an anonymous request gets 403) will do.
_testenv_s3_answers() {
	local status
	if command -v curl >/dev/null 2>&1; then
		status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/" 2>/dev/null) || return 1
		[ "$status" != 000 ]
	else
		exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || return 1
		printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		local line
		IFS= read -r -t 2 line <&3
		exec 3<&- 3>&-
		[[ $line == HTTP/* ]]
	fi
}

testenv_s3_start() {
	local bin
	bin=$(_testenv_s3_versitygw) || return 1

	TESTENV_S3_DIR=$(mktemp -d "${TMPDIR:-/tmp}/trove-s3.XXXXXX") || return 1
	mkdir -p "$TESTENV_S3_DIR/data" || return 1
	local access secret region=us-east-1 log="$TESTENV_S3_DIR/versitygw.log"
	access="trove$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
	secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')

	local attempt port started="" i
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$((20000 + RANDOM % 40000))
		_testenv_s3_port_free "$port" || continue
		# Keys go through the environment, not the command line, so that
		# other users of the machine cannot read them from ps.
		ROOT_ACCESS_KEY_ID="$access" ROOT_SECRET_ACCESS_KEY="$secret" \
			"$bin" --port "127.0.0.1:$port" --region "$region" --quiet \
			posix "$TESTENV_S3_DIR/data" >>"$log" 2>&1 </dev/null &
		TESTENV_S3_PID=$!
		for i in $(seq 1 100); do # up to 10 s
			if ! kill -0 "$TESTENV_S3_PID" 2>/dev/null; then
				break
			fi
			if _testenv_s3_answers "$port"; then
				started=1
				break 2
			fi
			sleep 0.1
		done
		kill "$TESTENV_S3_PID" 2>/dev/null || true
		wait "$TESTENV_S3_PID" 2>/dev/null || true
		unset TESTENV_S3_PID
		_testenv_s3_log "start on port $port failed (attempt $attempt); trying another port"
	done
	if [ -z "$started" ]; then
		cat "$log" >&2 2>/dev/null
		_testenv_s3_log "versitygw did not start (log above)"
		return 1
	fi

	export TROVE_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
	export TROVE_TEST_S3_ACCESS_KEY="$access"
	export TROVE_TEST_S3_SECRET_KEY="$secret"
	export TROVE_TEST_S3_REGION="$region"
	_testenv_s3_log "versitygw $TESTENV_S3_VERSITYGW_VERSION on 127.0.0.1:$port (pid $TESTENV_S3_PID, data $TESTENV_S3_DIR/data)"
}

testenv_s3_stop() {
	if [ -n "${TESTENV_S3_PID:-}" ]; then
		kill "$TESTENV_S3_PID" 2>/dev/null || true
		wait "$TESTENV_S3_PID" 2>/dev/null || true
	fi
	if [ -n "${TESTENV_S3_DIR:-}" ]; then
		rm -rf "$TESTENV_S3_DIR"
	fi
	unset TESTENV_S3_PID TESTENV_S3_DIR TROVE_TEST_S3_ENDPOINT TROVE_TEST_S3_ACCESS_KEY TROVE_TEST_S3_SECRET_KEY TROVE_TEST_S3_REGION
	return 0
}

if [ -z "${TESTENV_S3_NO_START:-}" ]; then
	testenv_s3_start || return 1
fi
