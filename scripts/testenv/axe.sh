# shellcheck shell=bash
# Makes axe-core available for the web UI's accessibility tests
# (internal/e2e, TestWebUIAccessibility). Meant to be SOURCED (by
# scripts/test.sh, or by hand); sourcing it exports
#
#   TROVE_TEST_AXE   the path of axe.min.js, which the tests inject into pages
#
# or returns non-zero with the reason on stderr.
#
# axe-core is installed once per machine with npm into a cache directory
# ($TESTENV_AXE_DIR, by default $XDG_CACHE_HOME/trove-testenv/axe-<version>),
# at the pinned version below; like the browser, it never makes a test skip.

: "${TESTENV_AXE_VERSION:=4.10.3}"
: "${TESTENV_AXE_DIR:=${XDG_CACHE_HOME:-$HOME/.cache}/trove-testenv/axe-$TESTENV_AXE_VERSION}"

_testenv_axe_log() { echo "testenv/axe: $*" >&2; }

# testenv_axe_find prints the path of axe.min.js, installing it first if
# needed.
testenv_axe_find() {
	local js="$TESTENV_AXE_DIR/node_modules/axe-core/axe.min.js"
	if [ ! -s "$js" ]; then
		command -v npm >/dev/null 2>&1 || {
			_testenv_axe_log "npm is not on the PATH: the accessibility tests need axe-core; install Node.js and npm (Debian: apt-get install -y npm) and run again"
			return 1
		}
		_testenv_axe_log "installing axe-core@$TESTENV_AXE_VERSION into $TESTENV_AXE_DIR"
		mkdir -p "$TESTENV_AXE_DIR" || return 1
		npm install --silent --no-audit --no-fund --prefix "$TESTENV_AXE_DIR" "axe-core@$TESTENV_AXE_VERSION" >&2 || {
			_testenv_axe_log "npm install axe-core@$TESTENV_AXE_VERSION failed (output above)"
			return 1
		}
	fi
	[ -s "$js" ] || {
		_testenv_axe_log "$js is missing after the installation"
		return 1
	}
	echo "$js"
}

if [ -z "${TESTENV_AXE_NO_START:-}" ]; then
	TROVE_TEST_AXE=$(testenv_axe_find) || return 1
	export TROVE_TEST_AXE
fi
