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

testenv_oci_conformance_build() {
	local gobin bin dir
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	bin="$gobin/oci-conformance-${TESTENV_OCI_CONFORMANCE_VERSION##*-}"
	if [ -x "$bin" ]; then
		echo "$bin"
		return 0
	fi
	echo "testenv/oci-conformance: building the OCI conformance suite into $bin" >&2
	dir=$(cd / && GOFLAGS=-mod=mod go mod download -json \
		"github.com/opencontainers/distribution-spec/conformance@$TESTENV_OCI_CONFORMANCE_VERSION" |
		sed -n 's/.*"Dir": "\(.*\)",$/\1/p') || true
	[ -n "$dir" ] && [ -d "$dir" ] || {
		echo "testenv/oci-conformance: go mod download failed" >&2
		return 1
	}
	mkdir -p "$gobin" || return 1
	(cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$bin.partial" .) >&2 || {
		rm -f "$bin.partial"
		return 1
	}
	mv "$bin.partial" "$bin" && echo "$bin"
}

TROVE_TEST_OCI_CONFORMANCE=$(testenv_oci_conformance_build) || return 1
export TROVE_TEST_OCI_CONFORMANCE
