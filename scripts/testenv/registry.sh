# shellcheck shell=bash
# Makes distribution's OCI registry (the reference implementation of the
# OCI distribution spec) available for Trove's `trove oci push`/`oci pull`
# end-to-end tests (internal/e2e, TestOCIPushPull). Meant to be SOURCED (by
# scripts/test.sh, or by hand); sourcing it exports
#
#   TROVE_TEST_OCI_REGISTRY   the path of a registry binary of $TESTENV_REGISTRY_VERSION
#
# or returns non-zero with the reason on stderr. The binary is built once
# per machine with `go install` into $(go env GOPATH)/bin as
# registry-$TESTENV_REGISTRY_VERSION (about a minute), like versitygw.
#
# The tests start the registry themselves, one per test, on a free port of
# 127.0.0.1 with filesystem storage in the test's temporary directory and
# TLS with a certificate of a CA the test makes (OpenTofu speaks HTTPS to
# OCI registries), and stop it when the test ends.

: "${TESTENV_REGISTRY_VERSION:=v3.1.2}"

_testenv_registry_log() { echo "testenv/registry: $*" >&2; }

# testenv_registry_build prints the path of the registry binary, building
# it first if needed.
testenv_registry_build() {
	local gobin bin info tmp
	command -v go >/dev/null 2>&1 || {
		_testenv_registry_log "go is not on the PATH: it is needed to build the registry"
		return 1
	}
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	bin="$gobin/registry-$TESTENV_REGISTRY_VERSION"
	# The build info is read whole before it is matched (see s3.sh).
	info=""
	[ -x "$bin" ] && info=$(go version -m "$bin" 2>/dev/null) || info=""
	if [ -n "$info" ] &&
		grep -qE "^[[:space:]]+mod[[:space:]]+github.com/distribution/distribution/v3[[:space:]]+$TESTENV_REGISTRY_VERSION([[:space:]]|$)" <<<"$info"; then
		echo "$bin"
		return 0
	fi
	_testenv_registry_log "building distribution's registry $TESTENV_REGISTRY_VERSION into $bin (once per machine; about a minute)"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/trove-registry-bin.XXXXXX") || return 1
	(cd / && GOBIN="$tmp" go install "github.com/distribution/distribution/v3/cmd/registry@$TESTENV_REGISTRY_VERSION") >&2 || {
		_testenv_registry_log "go install github.com/distribution/distribution/v3/cmd/registry@$TESTENV_REGISTRY_VERSION failed (output above)"
		rm -rf "$tmp"
		return 1
	}
	mkdir -p "$gobin" && mv "$tmp/registry" "$bin" || {
		rm -rf "$tmp"
		return 1
	}
	rm -rf "$tmp"
	echo "$bin"
}

TROVE_TEST_OCI_REGISTRY=$(testenv_registry_build) || return 1
export TROVE_TEST_OCI_REGISTRY
