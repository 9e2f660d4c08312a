# Trove's developer entry points. Binaries go to $(BIN) (default bin/).
#
#   make build   builds trove and trove-loadtest
#   make test    runs scripts/test.sh: the whole test suite, as CI does
#   make bench   runs the Go benchmarks, then the loopback load test against
#                a minimal static baseline (see docs/benchmarks.md);
#                LOADTEST_FLAGS passes flags to it, e.g. LOADTEST_FLAGS='-rounds 1'

GO             ?= go
BIN            ?= bin
LOADTEST_FLAGS ?=

.PHONY: build test bench loadtest clean

build:
	$(GO) build -o $(BIN)/trove ./cmd/trove
	$(GO) build -o $(BIN)/trove-loadtest ./cmd/trove-loadtest

test:
	bash scripts/test.sh

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...
	$(BIN)/trove-loadtest -trove $(BIN)/trove $(LOADTEST_FLAGS)

# loadtest is the second half of bench alone.
loadtest: build
	$(BIN)/trove-loadtest -trove $(BIN)/trove $(LOADTEST_FLAGS)

clean:
	rm -rf $(BIN)
