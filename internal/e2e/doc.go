// Package e2e holds Trove's end-to-end tests: they build the real `trove`
// binary and a small example provider, run `trove serve` as a process,
// publish goreleaser-style releases with `trove publish`, and install them
// with the real `terraform` and `tofu` CLIs: every client-facing scenario
// (providers, modules, login, the Terraform provider of Trove, the README
// walkthrough) runs once per client (forEachClient). The web UI is driven
// in headless Chromium (TestWebUI..., browser_test.go). The package has no
// non-test code; its tests need `go`, `terraform`, OpenTofu (the binary
// TROVE_TEST_TOFU names, else `tofu` on the PATH), Chromium (the binary
// TROVE_TEST_CHROMIUM names, else /usr/bin/chromium) and, for the OCI
// tests, the ORAS CLI (the binary TROVE_TEST_ORAS names) and fail, never
// skip, without them. Run them with scripts/test.sh or
//
//	source scripts/testenv/tofu.sh       # builds OpenTofu once per machine
//	source scripts/testenv/chromium.sh   # installs Chromium if missing (as root)
//	source scripts/testenv/oras.sh       # installs ORAS once per machine
//	go test -count=1 -timeout 20m ./internal/e2e
package e2e
