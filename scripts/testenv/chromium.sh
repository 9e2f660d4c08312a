# shellcheck shell=bash
# Makes Chromium available for the web UI's browser tests (internal/e2e,
# TestWebUI...). Meant to be SOURCED (by scripts/test.sh, or by hand);
# sourcing it exports
#
#   TROVE_TEST_CHROMIUM   the path of the chromium binary the tests drive
#
# or returns non-zero with the reason on stderr.
#
# The tests drive Debian's chromium package headless (chromedp). When
# /usr/bin/chromium is missing, this installs it with apt-get as root (CI
# runs as root on a fresh Debian machine; about a minute), and otherwise
# fails with the command to run: like terraform, the browser tests never
# skip.

: "${TESTENV_CHROMIUM_BIN:=/usr/bin/chromium}"

_testenv_chromium_log() { echo "testenv/chromium: $*" >&2; }

# _testenv_chromium_works reports whether BIN starts and names itself
# Chromium. The output is read whole before it is matched (see tofu.sh:
# grep -q would exit early and SIGPIPE the writer under pipefail).
_testenv_chromium_works() {
	local out
	out=$("$1" --version 2>/dev/null) || return 1
	grep -qi '^chromium' <<<"$out"
}

# testenv_chromium_install installs Debian's chromium package (as root).
testenv_chromium_install() {
	local install="apt-get update && apt-get install -y chromium"
	if [ "$(id -u)" != 0 ]; then
		_testenv_chromium_log "$TESTENV_CHROMIUM_BIN is missing: the web UI's browser tests drive it headless; install it with:"
		_testenv_chromium_log "  sudo sh -c '$install'"
		return 1
	fi
	command -v apt-get >/dev/null 2>&1 || {
		_testenv_chromium_log "$TESTENV_CHROMIUM_BIN is missing and apt-get is not on the PATH: install Chromium with your package manager (Debian: $install) and run again"
		return 1
	}
	_testenv_chromium_log "$TESTENV_CHROMIUM_BIN is missing: running '$install' (about a minute)"
	_testenv_chromium_log "apt-get update"
	DEBIAN_FRONTEND=noninteractive apt-get update >&2 || {
		_testenv_chromium_log "apt-get update failed (output above)"
		return 1
	}
	_testenv_chromium_log "apt-get install -y chromium"
	DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2 || {
		_testenv_chromium_log "apt-get install -y chromium failed (output above)"
		return 1
	}
	_testenv_chromium_log "installed $("$TESTENV_CHROMIUM_BIN" --version 2>/dev/null)"
}

# testenv_chromium_find prints the path of a working chromium, installing
# it first if needed.
testenv_chromium_find() {
	if [ ! -x "$TESTENV_CHROMIUM_BIN" ]; then
		testenv_chromium_install || return 1
	fi
	_testenv_chromium_works "$TESTENV_CHROMIUM_BIN" || {
		_testenv_chromium_log "$TESTENV_CHROMIUM_BIN --version does not report Chromium; reinstall it with: apt-get install --reinstall -y chromium"
		return 1
	}
	echo "$TESTENV_CHROMIUM_BIN"
}

if [ -z "${TESTENV_CHROMIUM_NO_START:-}" ]; then
	TROVE_TEST_CHROMIUM=$(testenv_chromium_find) || return 1
	export TROVE_TEST_CHROMIUM
fi
