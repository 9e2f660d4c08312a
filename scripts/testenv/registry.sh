# shellcheck shell=bash
# Makes distribution's OCI registry (the reference implementation of the
# OCI distribution spec) available for Trove's `trove oci push`/`oci pull`
# end-to-end test (internal/e2e, TestOCIPushPull). Meant to be SOURCED (by
# scripts/test.sh, or by hand); sourcing it exports
#
#   TROVE_TEST_OCI_REGISTRY   the path of a registry binary of $TESTENV_REGISTRY_VERSION
#
# or returns non-zero with the reason on stderr. The registry is installed
# with `go install github.com/distribution/distribution/v3/cmd/registry@$VERSION`
# once per machine into $(go env GOPATH)/bin/registry-$VERSION/ (through
# gotool.sh, like ORAS); later runs reuse it.
#
# The test starts the registry itself, on a free port of 127.0.0.1 with
# filesystem storage in its temporary directory and TLS with a certificate
# of a CA it makes (OpenTofu speaks HTTPS to OCI registries; the CA is the
# test's own), and stops it when it ends.

: "${TESTENV_REGISTRY_VERSION:=v3.1.2}"

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

# _testenv_registry_wanted BIN reports whether BIN was built from
# distribution $TESTENV_REGISTRY_VERSION (its build info, read whole before
# it is matched, as in testenv/tofu.sh).
_testenv_registry_wanted() {
	local info
	info=$(go version -m "$1" 2>/dev/null) || return 1
	grep -qE "^[[:space:]]+mod[[:space:]]+github.com/distribution/distribution/v3[[:space:]]+$TESTENV_REGISTRY_VERSION([[:space:]]|$)" <<<"$info"
}

# _testenv_registry_compile OUT installs the registry into OUT.
_testenv_registry_compile() {
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/trove-registry.XXXXXX") || return 1
	(cd / && GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath \
		"github.com/distribution/distribution/v3/cmd/registry@$TESTENV_REGISTRY_VERSION") &&
		mv "$tmp/registry" "$1"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

# testenv_registry_install prints the path of the registry binary,
# installing it first if needed.
testenv_registry_install() {
	testenv_gotool "distribution's registry $TESTENV_REGISTRY_VERSION" "registry-$TESTENV_REGISTRY_VERSION/registry" \
		_testenv_registry_wanted _testenv_registry_compile "one to three minutes"
}

if [ -z "${TESTENV_REGISTRY_NO_START:-}" ]; then
	TROVE_TEST_OCI_REGISTRY=$(testenv_registry_install) || return 1
	export TROVE_TEST_OCI_REGISTRY
fi
