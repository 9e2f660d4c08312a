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

# testenv_tofu_build prints the path of a tofu binary of the wanted
# version, building it first if needed.
testenv_tofu_build() {
	local want=${TESTENV_TOFU_VERSION#v} gobin bin dir work
	if command -v tofu >/dev/null 2>&1 &&
		_testenv_tofu_is tofu "$want"; then
		command -v tofu
		return 0
	fi
	command -v go >/dev/null 2>&1 || {
		_testenv_tofu_log "go is not on the PATH: it is needed to build OpenTofu"
		return 1
	}
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	bin="$gobin/tofu-$TESTENV_TOFU_VERSION"
	if [ -x "$bin" ] && _testenv_tofu_is "$bin" "$want"; then
		echo "$bin"
		return 0
	fi
	_testenv_tofu_log "building OpenTofu $TESTENV_TOFU_VERSION into $bin (once per machine; 3 to 9 minutes)"
	dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@$TESTENV_TOFU_VERSION" |
		sed -n 's/.*"Dir": "\(.*\)",$/\1/p') || true
	[ -n "$dir" ] && [ -d "$dir" ] || {
		_testenv_tofu_log "go mod download github.com/opentofu/opentofu@$TESTENV_TOFU_VERSION failed"
		return 1
	}
	work=$(mktemp -d "${TMPDIR:-/tmp}/trove-tofu-src.XXXXXX") || return 1
	cp -R "$dir/." "$work/" && chmod -R u+w "$work" || {
		rm -rf "$work"
		return 1
	}
	mkdir -p "$gobin" || return 1
	(cd "$work" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
		-o "$bin.partial" ./cmd/tofu) >&2 || {
		_testenv_tofu_log "building OpenTofu failed (output above)"
		rm -rf "$work" "$bin.partial"
		return 1
	}
	rm -rf "$work"
	mv "$bin.partial" "$bin" || return 1
	_testenv_tofu_is "$bin" "$want" || {
		_testenv_tofu_log "$bin does not report OpenTofu v$want"
		return 1
	}
	echo "$bin"
}

if [ -z "${TESTENV_TOFU_NO_START:-}" ]; then
	TROVE_TEST_TOFU=$(testenv_tofu_build) || return 1
	export TROVE_TEST_TOFU
fi
