// Package e2e holds Trove's end-to-end tests: they build the real `trove`
// binary and a small example provider, run `trove serve` as a process,
// publish goreleaser-style releases with `trove publish`, and install them
// with the real `terraform` CLI. The package has no non-test code; its
// tests need `go` and `terraform` on the PATH and fail, never skip,
// without them. Run them with scripts/test.sh or
//
//	go test -count=1 -timeout 20m ./internal/e2e
package e2e
