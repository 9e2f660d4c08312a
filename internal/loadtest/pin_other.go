//go:build !linux

package loadtest

import (
	"os/exec"

	"trove.dev/trove/internal/registry"
)

// pinning is Linux's CPU affinity; elsewhere the harness cannot pin.
type pinning struct{}

func newPinning() (*pinning, error) {
	return nil, registry.Errorf(registry.Invalid, "pinning the servers to a CPU needs Linux")
}

func (p *pinning) pinHarness() error         { return nil }
func (p *pinning) start(cmd *exec.Cmd) error { return cmd.Start() }
func (p *pinning) describe() string          { return "" }
