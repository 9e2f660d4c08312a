# shellcheck shell=bash
# Makes the ORAS CLI available for Trove's end-to-end OCI tests
# (internal/e2e, TestOCIWithORAS). Meant to be SOURCED (by scripts/test.sh,
# or by hand); sourcing it exports
#
#   TROVE_TEST_ORAS   the path of an oras binary of $TESTENV_ORAS_VERSION
#
# or returns non-zero with the reason on stderr. The CLI is installed with
# `go install oras.land/oras/cmd/oras@$TESTENV_ORAS_VERSION` once per
# machine into a cache directory, $(go env GOPATH)/bin/oras-$VERSION/, like
# OpenTofu (testenv/tofu.sh); later runs reuse it.

: "${TESTENV_ORAS_VERSION:=v1.3.6}"

_testenv_oras_log() { echo "testenv/oras: $*" >&2; }

# _testenv_oras_is BIN VERSION reports whether BIN is ORAS VERSION (the
# output is read whole before it is matched, as in testenv/tofu.sh).
_testenv_oras_is() {
	local out
	out=$("$1" version 2>/dev/null) || return 1
	grep -q "^Version: *$2\$" <<<"$out"
}

# testenv_oras_install prints the path of an oras binary of the wanted
# version, installing it first if needed.
testenv_oras_install() {
	local want=${TESTENV_ORAS_VERSION#v} gobin dir
	command -v go >/dev/null 2>&1 || {
		_testenv_oras_log "go is not on the PATH: it is needed to install ORAS"
		return 1
	}
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	dir="$gobin/oras-$TESTENV_ORAS_VERSION"
	if [ -x "$dir/oras" ] && _testenv_oras_is "$dir/oras" "$want"; then
		echo "$dir/oras"
		return 0
	fi
	_testenv_oras_log "installing ORAS $TESTENV_ORAS_VERSION into $dir (once per machine)"
	mkdir -p "$dir" || return 1
	(cd / && GOBIN="$dir" GOFLAGS=-mod=mod go install -trimpath \
		"oras.land/oras/cmd/oras@$TESTENV_ORAS_VERSION") >&2 || {
		_testenv_oras_log "go install oras.land/oras/cmd/oras@$TESTENV_ORAS_VERSION failed (output above)"
		return 1
	}
	_testenv_oras_is "$dir/oras" "$want" || {
		_testenv_oras_log "$dir/oras does not report ORAS $want"
		return 1
	}
	echo "$dir/oras"
}

if [ -z "${TESTENV_ORAS_NO_START:-}" ]; then
	TROVE_TEST_ORAS=$(testenv_oras_install) || return 1
	export TROVE_TEST_ORAS
fi
