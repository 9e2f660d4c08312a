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

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

_testenv_oras_log() { echo "testenv/oras: $*" >&2; }

# _testenv_oras_is BIN VERSION reports whether BIN is ORAS VERSION (the
# output is read whole before it is matched, as in testenv/tofu.sh).
_testenv_oras_is() {
	local out
	out=$("$1" version 2>/dev/null) || return 1
	grep -q "^Version: *$2\$" <<<"$out"
}

# _testenv_oras_wanted BIN reports whether BIN is the wanted ORAS.
_testenv_oras_wanted() { _testenv_oras_is "$1" "${TESTENV_ORAS_VERSION#v}"; }

# _testenv_oras_compile OUT installs ORAS into OUT.
_testenv_oras_compile() {
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/trove-oras.XXXXXX") || return 1
	(cd / && GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath "oras.land/oras/cmd/oras@$TESTENV_ORAS_VERSION") &&
		mv "$tmp/oras" "$1"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

# testenv_oras_install prints the path of an oras binary of the wanted
# version, installing it first if needed.
testenv_oras_install() {
	testenv_gotool "ORAS $TESTENV_ORAS_VERSION" "oras-$TESTENV_ORAS_VERSION/oras" \
		_testenv_oras_wanted _testenv_oras_compile "about a minute"
}

if [ -z "${TESTENV_ORAS_NO_START:-}" ]; then
	TROVE_TEST_ORAS=$(testenv_oras_install) || return 1
	export TROVE_TEST_ORAS
fi
