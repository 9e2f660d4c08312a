# Trove's developer entry points. Binaries go to $(BIN) (default bin/).
#
#   make build   builds trove and trove-loadtest
#   make release builds the release into $(DIST) (default dist/): an archive
#                and a CycloneDX SBOM per platform, SHA256SUMS and the OCI
#                image layout dist/image (docs/install.md); VERSION=1.4.0
#                names it (default: the git tag, else dev-<commit>)
#   make test    runs scripts/test.sh: the whole test suite, as CI does
#   make bench   runs the Go benchmarks, then the loopback load test against
#                a minimal static baseline (see docs/benchmarks.md);
#                LOADTEST_FLAGS passes flags to it, e.g. LOADTEST_FLAGS='-rounds 1'
#   make bench-scaleout
#                the load test with the PostgreSQL index and S3 blobs
#                (-backend postgres-s3), on the servers TROVE_TEST_POSTGRES_DSN
#                and TROVE_TEST_S3_* name, else on throwaway ones it starts

GO             ?= go
BIN            ?= bin
LOADTEST_FLAGS ?=
DIST           ?= dist
VERSION        ?= $(shell git describe --tags --exact-match 2>/dev/null | sed 's/^v//')

.PHONY: bench-mirror build release test bench loadtest bench-scaleout clean

build:
	$(GO) build -o $(BIN)/trove ./cmd/trove
	$(GO) build -o $(BIN)/trove-loadtest ./cmd/trove-loadtest

test:
	bash scripts/test.sh

release:
	$(GO) run ./cmd/trove-release -version "$(or $(VERSION),dev-$(shell git rev-parse --short=12 HEAD))" -out $(DIST)

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...
	$(BIN)/trove-loadtest -trove $(BIN)/trove $(LOADTEST_FLAGS)

# loadtest is the second half of bench alone.
loadtest: build
	$(BIN)/trove-loadtest -trove $(BIN)/trove $(LOADTEST_FLAGS)

# bench-mirror times terraform init straight from an upstream registry,
# through a cold mirror and through the warm mirror (docs/benchmarks.md).
bench-mirror:
	TROVE_BENCH=1 $(GO) test -count=1 -run '^TestMirrorInstallSpeed$$' -v ./internal/e2e/

# bench-scaleout sources scripts/testenv/postgres.sh and s3.sh for the
# servers that are not named in the environment, and stops those it started.
bench-scaleout: build
	@bash -c 'set -e; \
	stop() { if [ -n "$$started_s3" ]; then testenv_s3_stop; fi; if [ -n "$$started_pg" ]; then testenv_postgres_stop; fi; }; \
	trap stop EXIT; \
	if [ -z "$$TROVE_TEST_POSTGRES_DSN" ]; then started_pg=1; source scripts/testenv/postgres.sh; fi; \
	if [ -z "$$TROVE_TEST_S3_ENDPOINT" ]; then started_s3=1; source scripts/testenv/s3.sh; fi; \
	$(BIN)/trove-loadtest -trove $(BIN)/trove -backend postgres-s3 $(LOADTEST_FLAGS)'

clean:
	rm -rf $(BIN) $(DIST)
