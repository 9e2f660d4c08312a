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
# The example provider and the test OpenID provider (single sign-on tests)
# live under testdata, which ./... skips: vet them by name.
go vet ./... ./internal/e2e/testdata/terraform-provider-example ./internal/e2e/testdata/oidc-provider

# --- OpenTofu ------------------------------------------------------------
# Every client-facing end-to-end scenario runs with terraform and with
# tofu. OpenTofu is built from source once per machine (3 to 9 minutes, then
# cached in $(go env GOPATH)/bin); testenv/tofu.sh exports TROVE_TEST_TOFU.
# shellcheck source=testenv/tofu.sh
source scripts/testenv/tofu.sh || fail "OpenTofu could not be built (output above); the end-to-end tests need it"
"$TROVE_TEST_TOFU" version 2>/dev/null | grep "^OpenTofu"

# --- Chromium --------------------------------------------------------------
# The web UI's browser tests (internal/e2e, TestWebUI...) drive Debian's
# chromium headless; testenv/chromium.sh installs it when missing (as root,
# with apt-get) and exports TROVE_TEST_CHROMIUM.
# shellcheck source=testenv/chromium.sh
source scripts/testenv/chromium.sh || fail "Chromium is not available (see above); the web UI's browser tests need it"
"$TROVE_TEST_CHROMIUM" --version 2>/dev/null
# The accessibility test (TestWebUIAccessibility) injects axe-core into the
# pages; testenv/axe.sh installs the pinned version with npm into a cache
# directory once and exports TROVE_TEST_AXE.
# shellcheck source=testenv/axe.sh
source scripts/testenv/axe.sh || fail "axe-core is not available (see above); the web UI's accessibility test needs it"

# --- Helm ----------------------------------------------------------------
# The chart's tests (deploy/ and the module deploy/helm/test) run helm lint
# and helm template; testenv/helm.sh builds Helm from the Go module cache
# once per machine (2 to 5 minutes, then cached in $(go env GOPATH)/bin) and
# exports TROVE_TEST_HELM.
# shellcheck source=testenv/helm.sh
source scripts/testenv/helm.sh || fail "Helm could not be built (output above); the Helm chart's tests need it"
"$TROVE_TEST_HELM" version --short

# --- OCI conformance -------------------------------------------------------
# The OCI distribution-spec conformance suite runs against Trove's read-only
# OCI API (internal/protocol/oci, TestConformance); testenv/oci-conformance.sh
# builds it once from the module cache and exports TROVE_TEST_OCI_CONFORMANCE.
# shellcheck source=testenv/oci-conformance.sh
source scripts/testenv/oci-conformance.sh || fail "the OCI conformance suite could not be built (output above)"
# `trove oci push`/`oci pull` copy to and from distribution's registry
# (internal/e2e, TestOCIPushPull); testenv/registry.sh installs it once per
# machine with go install (through gotool.sh) and exports
# TROVE_TEST_OCI_REGISTRY; the test starts and stops it.
# shellcheck source=testenv/registry.sh
source scripts/testenv/registry.sh || fail "distribution's registry could not be built (output above)"

# --- ORAS ------------------------------------------------------------------
# The end-to-end OCI tests (internal/e2e, TestOCIWithORAS) pull, list and
# discover with the ORAS CLI; testenv/oras.sh installs it with go install
# once per machine into a cache directory and exports TROVE_TEST_ORAS.
# shellcheck source=testenv/oras.sh
source scripts/testenv/oras.sh || fail "the ORAS CLI could not be installed (output above); the end-to-end OCI tests need it"

# --- Services ------------------------------------------------------------
# A throwaway PostgreSQL and an S3-compatible server (versitygw, built once
# into $(go env GOPATH)/bin) on loopback; both are stopped on exit.
# TROVE_REQUIRE_BACKENDS turns the real-backend tests' skip into a failure.
cleanup() {
	if declare -F testenv_s3_stop >/dev/null; then testenv_s3_stop; fi
	if declare -F testenv_postgres_stop >/dev/null; then testenv_postgres_stop; fi
}
trap cleanup EXIT
# shellcheck source=testenv/postgres.sh
source scripts/testenv/postgres.sh
# shellcheck source=testenv/s3.sh
source scripts/testenv/s3.sh
export TROVE_REQUIRE_BACKENDS=1

# --- Provider docs -------------------------------------------------------
# The Terraform provider's docs are generated by tfplugindocs: fail on drift.
scripts/check-provider-docs.sh

# --- Tests ---------------------------------------------------------------
# -race for every package; the end-to-end tests build trove and the example
# provider for two platforms and run terraform, hence the long timeout.
# TF_ACC runs the Terraform provider's acceptance tests with this terraform.
export TF_ACC=1 TF_ACC_TERRAFORM_PATH="$(command -v terraform)"
go test -race -count=1 -timeout 40m ./...
# The chart decoded strictly into the Kubernetes API types: a module of its
# own, so that k8s.io/api stays out of Trove's go.mod.
(cd deploy/helm/test && go vet ./... && go test -race -count=1 ./...)
