# shellcheck shell=bash
# The one way the test environment builds a Go tool once per machine and
# keeps it: sourced by the testenv scripts of the tools built from the Go
# module cache (tofu.sh, helm.sh, s3.sh's versitygw, oci-conformance.sh,
# oras.sh).

# testenv_gotool NAME FILE IS BUILD HINT prints the path of a cached build
# of a tool, building it first if there is none or the one there is not
# the wanted build.
#
#   NAME   what the log calls the tool, with its version ("Helm v3.22.0")
#   FILE   the binary's path under $(go env GOBIN) or $(go env GOPATH)/bin
#   IS     a function: `IS BIN` succeeds when BIN is the wanted build
#   BUILD  a function: `BUILD OUT` builds the tool into the file OUT
#   HINT   how long a build takes, for the log ("2 to 5 minutes")
#
# A build goes to OUT.partial first and is moved into place only once it
# is whole and IS accepts it, so an interrupted build is never taken for
# a good one.
testenv_gotool() {
	local name=$1 file=$2 is=$3 build=$4 hint=$5 gobin bin
	command -v go >/dev/null 2>&1 || {
		echo "testenv: go is not on the PATH: it is needed to build $name" >&2
		return 1
	}
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	bin="$gobin/$file"
	if [ -x "$bin" ] && "$is" "$bin"; then
		echo "$bin"
		return 0
	fi
	echo "testenv: building $name into $bin (once per machine; $hint)" >&2
	mkdir -p "$(dirname "$bin")" || return 1
	rm -f "$bin.partial"
	"$build" "$bin.partial" >&2 && [ -x "$bin.partial" ] || {
		echo "testenv: building $name failed (output above)" >&2
		rm -f "$bin.partial"
		return 1
	}
	mv "$bin.partial" "$bin" || return 1
	"$is" "$bin" || {
		echo "testenv: $bin does not report $name" >&2
		return 1
	}
	echo "$bin"
}

# testenv_go_mod_dir MODULE@VERSION downloads a module into the module
# cache and prints the directory of its source.
testenv_go_mod_dir() {
	local dir
	dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "$1" |
		sed -n 's/.*"Dir": "\(.*\)",$/\1/p') || true
	[ -n "$dir" ] && [ -d "$dir" ] || {
		echo "testenv: go mod download $1 failed" >&2
		return 1
	}
	echo "$dir"
}
