# shellcheck shell=bash
# Makes the Helm CLI available for the tests of Trove's chart
# (deploy/helm/trove). Meant to be SOURCED (by scripts/test.sh, or by hand);
# sourcing it exports
#
#   TROVE_TEST_HELM   the path of a helm binary of $TESTENV_HELM_VERSION
#
# or returns non-zero with the reason on stderr.
#
# Helm is built from source with `go install` (its go.mod has no replace
# directives): once per machine, into $(go env GOPATH)/bin as
# helm-$TESTENV_HELM_VERSION (2 to 5 minutes on 2 cores), like OpenTofu
# and versitygw. A helm already on the PATH with the wanted version is used
# as it is.

: "${TESTENV_HELM_VERSION:=v3.22.0}"

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

_testenv_helm_log() { echo "testenv/helm: $*" >&2; }

# _testenv_helm_is BIN VERSION reports whether BIN is Helm VERSION. The
# output is read whole before it is matched (see testenv/tofu.sh).
_testenv_helm_is() {
	local out
	out=$("$1" version --template '{{.Version}}' 2>/dev/null) || return 1
	[ "$out" = "$2" ]
}

# _testenv_helm_wanted BIN reports whether BIN is the wanted Helm.
_testenv_helm_wanted() { _testenv_helm_is "$1" "$TESTENV_HELM_VERSION"; }

# _testenv_helm_compile OUT builds Helm into OUT. The version is stamped
# the way Helm's own Makefile does, so that `helm version` reports it (a
# plain go install says v3.x-dev).
_testenv_helm_compile() {
	local out=$1 tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/trove-helm.XXXXXX") || return 1
	(cd / && GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath \
		-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$TESTENV_HELM_VERSION" \
		"helm.sh/helm/v3/cmd/helm@$TESTENV_HELM_VERSION") && mv "$tmp/helm" "$out"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

# testenv_helm_build prints the path of a helm binary of the wanted
# version, building it first if needed.
testenv_helm_build() {
	if command -v helm >/dev/null 2>&1 &&
		_testenv_helm_is helm "$TESTENV_HELM_VERSION"; then
		command -v helm
		return 0
	fi
	testenv_gotool "Helm $TESTENV_HELM_VERSION" "helm-$TESTENV_HELM_VERSION" \
		_testenv_helm_wanted _testenv_helm_compile "2 to 5 minutes"
}

if [ -z "${TESTENV_HELM_NO_START:-}" ]; then
	TROVE_TEST_HELM=$(testenv_helm_build) || return 1
	export TROVE_TEST_HELM
fi
