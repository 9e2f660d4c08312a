#!/usr/bin/env bash
# Runs Trove's whole test suite. This is the one command CI runs (.ci/run)
# and the one to run on a fresh machine: it checks the tools, formatting and
# vet, starts the services the tests need, and runs every test, the
# end-to-end tests with the real trove binary and terraform CLI included.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
	echo "scripts/test.sh: $*" >&2
	exit 1
}

# --- Tools ---------------------------------------------------------------
command -v go >/dev/null 2>&1 ||
	fail "go is not on the PATH: install Go $(sed -n 's/^go //p' go.mod) or newer"
command -v terraform >/dev/null 2>&1 ||
	fail "terraform is not on the PATH: the end-to-end tests (internal/e2e) install providers with the real terraform CLI 1.x; install it and run again"
go version
tf_version=$(terraform version 2>/dev/null) ||
	fail "terraform version failed; is the terraform on the PATH a working terraform CLI?"
echo "${tf_version%%$'\n'*}"

# --- Formatting and vet --------------------------------------------------
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "$unformatted" >&2
	fail "these files are not gofmt-formatted; run: gofmt -w ."
fi
# The example provider lives under testdata, which ./... skips: vet it by name.
go vet ./... ./internal/e2e/testdata/terraform-provider-example

# --- Services ------------------------------------------------------------
# Everything started here is stopped on exit.
cleanup() {
	:
	# Stop PostgreSQL and the S3 server here once they are started below.
}
trap cleanup EXIT

# PostgreSQL (to come with the PostgreSQL index): initdb and pg_ctl start a
# throwaway PostgreSQL 15 as the postgres user in a temporary directory it
# owns, on a free loopback port, then export the variable that turns the
# PostgreSQL tests' skip into a failure (scripts/testenv/postgres.sh is
# being written for this: source it here and stop it in cleanup).

# S3 (to come with the S3 blob store): build versitygw once into a cached
# tools folder, start it on 127.0.0.1 over a temporary POSIX directory with
# static keys, then export the variables that make the S3 tests mandatory.

# --- Tests ---------------------------------------------------------------
# -race for every package; the end-to-end tests build trove and the example
# provider for two platforms and run terraform, hence the long timeout.
go test -race -count=1 -timeout 20m ./...
