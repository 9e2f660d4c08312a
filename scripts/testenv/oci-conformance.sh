# shellcheck shell=bash
# Makes the OCI distribution-spec conformance suite available for Trove's
# OCI tests (internal/protocol/oci, TestConformance). Meant to be SOURCED
# (by scripts/test.sh, or by hand); sourcing it exports
#
#   TROVE_TEST_OCI_CONFORMANCE   the path of the suite's binary
#
# or returns non-zero with the reason on stderr. The suite is built once per
# machine from the Go module cache's copy of
# github.com/opencontainers/distribution-spec/conformance at the pinned
# $TESTENV_OCI_CONFORMANCE_VERSION (the module has no tagged versions) into
# $(go env GOPATH)/bin.

: "${TESTENV_OCI_CONFORMANCE_VERSION:=v0.0.0-20260831232431-97274622c111}"

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

# _testenv_oci_conformance_compile OUT builds the suite into OUT.
_testenv_oci_conformance_compile() {
	local dir
	dir=$(testenv_go_mod_dir "github.com/opencontainers/distribution-spec/conformance@$TESTENV_OCI_CONFORMANCE_VERSION") || return 1
	(cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$1" .)
}

# The suite's binary has no version to ask: its file name carries the
# commit it was built from.
_testenv_oci_conformance_wanted() { [ -x "$1" ]; }

testenv_oci_conformance_build() {
	testenv_gotool "the OCI conformance suite" "oci-conformance-${TESTENV_OCI_CONFORMANCE_VERSION##*-}" \
		_testenv_oci_conformance_wanted _testenv_oci_conformance_compile "about a minute"
}

TROVE_TEST_OCI_CONFORMANCE=$(testenv_oci_conformance_build) || return 1
export TROVE_TEST_OCI_CONFORMANCE
