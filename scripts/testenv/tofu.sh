# shellcheck shell=bash
# Makes the OpenTofu CLI available for Trove's end-to-end tests. Meant to be
# SOURCED (by scripts/test.sh, or by hand); sourcing it exports
#
#   TROVE_TEST_TOFU   the path of a tofu binary of $TESTENV_TOFU_VERSION
#
# or returns non-zero with the reason on stderr.
#
# OpenTofu cannot be installed with `go install` (its go.mod has replace
# directives), so this builds it as the main module from the Go module
# cache's copy of its source: once per machine, into $(go env GOPATH)/bin
# as tofu-$TESTENV_TOFU_VERSION (3 to 9 minutes on 2 cores), like versitygw.
# A tofu already on the PATH with the wanted version is used as it is.

: "${TESTENV_TOFU_VERSION:=v1.12.6}"

# shellcheck source=gotool.sh
source "$(dirname "${BASH_SOURCE[0]}")/gotool.sh" || return 1

_testenv_tofu_log() { echo "testenv/tofu: $*" >&2; }

# _testenv_tofu_is BIN VERSION reports whether BIN is OpenTofu VERSION. The
# output is read whole before it is matched: `tofu version | grep -q` would
# let grep exit at the match, and tofu's next write fail with SIGPIPE,
# which fails the pipeline under pipefail now and then.
_testenv_tofu_is() {
	local out
	out=$("$1" version 2>/dev/null) || return 1
	grep -qx "OpenTofu v$2" <<<"$out"
}

# _testenv_tofu_wanted BIN reports whether BIN is the wanted OpenTofu.
_testenv_tofu_wanted() { _testenv_tofu_is "$1" "${TESTENV_TOFU_VERSION#v}"; }

# _testenv_tofu_compile OUT builds OpenTofu into OUT from a writable copy of
# its source in the module cache.
_testenv_tofu_compile() {
	local out=$1 dir work
	dir=$(testenv_go_mod_dir "github.com/opentofu/opentofu@$TESTENV_TOFU_VERSION") || return 1
	work=$(mktemp -d "${TMPDIR:-/tmp}/trove-tofu-src.XXXXXX") || return 1
	cp -R "$dir/." "$work/" && chmod -R u+w "$work" &&
		(cd "$work" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
			-o "$out" ./cmd/tofu)
	local rc=$?
	rm -rf "$work"
	return $rc
}

# testenv_tofu_build prints the path of a tofu binary of the wanted
# version, building it first if needed.
testenv_tofu_build() {
	if command -v tofu >/dev/null 2>&1 &&
		_testenv_tofu_is tofu "${TESTENV_TOFU_VERSION#v}"; then
		command -v tofu
		return 0
	fi
	testenv_gotool "OpenTofu $TESTENV_TOFU_VERSION" "tofu-$TESTENV_TOFU_VERSION" \
		_testenv_tofu_wanted _testenv_tofu_compile "3 to 9 minutes"
}

if [ -z "${TESTENV_TOFU_NO_START:-}" ]; then
	TROVE_TEST_TOFU=$(testenv_tofu_build) || return 1
	export TROVE_TEST_TOFU
fi
