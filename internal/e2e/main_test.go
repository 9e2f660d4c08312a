package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// exampleProviderPkg is the example provider's package, relative to the
// module root.
const exampleProviderPkg = "./internal/e2e/testdata/terraform-provider-example"

// oidcProviderPkg is the test OpenID provider's package (sso_test.go).
const oidcProviderPkg = "./internal/e2e/testdata/oidc-provider"

// Built once by TestMain and shared by every test.
var (
	troveBin string // the trove binary under test

	// oidcProviderBin is the test OpenID provider (testdata/oidc-provider).
	oidcProviderBin string

	// hostPlatform is the platform terraform runs on ("linux_amd64");
	// otherPlatform is a second one every release also carries.
	hostPlatform, otherPlatform string

	// providerBins maps hostPlatform and otherPlatform to the example
	// provider's executable built for them.
	providerBins = map[string]string{}

	// terraformBin is terraform's path, or "" with terraformErr saying why.
	terraformBin string
	terraformErr error

	// tofuBin is OpenTofu's path, or "" with tofuErr saying why: the
	// binary TROVE_TEST_TOFU names (scripts/testenv/tofu.sh builds it),
	// else tofu on the PATH.
	tofuBin string
	tofuErr error
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	hostPlatform = runtime.GOOS + "_" + runtime.GOARCH
	otherPlatform = "linux_arm64"
	if hostPlatform == otherPlatform {
		otherPlatform = "linux_amd64"
	}
	terraformBin, terraformErr = exec.LookPath("terraform")
	tofuBin, tofuErr = lookTofu()

	work, err := os.MkdirTemp("", "trove-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(work)
	if err := buildAll(work); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the binaries under test failed:\n"+err.Error())
		return 1
	}
	return m.Run()
}

// buildAll builds trove and the test OpenID provider for this machine and
// the example provider for hostPlatform and otherPlatform into dir,
// concurrently.
func buildAll(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	type job struct {
		out, pkg, platform string
	}
	troveBin = filepath.Join(dir, "trove")
	oidcProviderBin = filepath.Join(dir, "oidc-provider")
	jobs := []job{{troveBin, "./cmd/trove", hostPlatform}, {oidcProviderBin, oidcProviderPkg, hostPlatform}}
	for _, p := range []string{hostPlatform, otherPlatform} {
		providerBins[p] = filepath.Join(dir, p, "terraform-provider-example")
		jobs = append(jobs, job{providerBins[p], exampleProviderPkg, p})
	}
	start := time.Now()
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			goos, goarch, _ := strings.Cut(j.platform, "_")
			cmd := exec.Command("go", "build", "-trimpath", "-o", j.out, j.pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go build -o %s %s (%s): %v\n%s", j.out, j.pkg, j.platform, err, out.String())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "e2e: built trove, the test OpenID provider and the example provider (%s, %s) in %s\n",
		hostPlatform, otherPlatform, time.Since(start).Round(time.Second))
	return nil
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the trove module (go env GOMOD is %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// lookTofu finds the OpenTofu binary the tests run.
func lookTofu() (string, error) {
	if bin := os.Getenv("TROVE_TEST_TOFU"); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("TROVE_TEST_TOFU=%s: %v", bin, err)
		}
		return bin, nil
	}
	return exec.LookPath("tofu")
}

// requireTofu returns the tofu binary, failing the test with the command
// that provides it when it is missing: like terraform, never a skip.
func requireTofu(t *testing.T) string {
	t.Helper()
	if tofuErr != nil {
		t.Fatalf("OpenTofu is not available (%v): the end-to-end tests run every client-facing scenario with tofu too; "+
			"build it with 'source scripts/testenv/tofu.sh' (it exports TROVE_TEST_TOFU) and run again", tofuErr)
	}
	return tofuBin
}

// requireTerraform returns the terraform binary, failing the test with a
// clear message when it is missing: the end-to-end tests never skip.
func requireTerraform(t *testing.T) string {
	t.Helper()
	if terraformErr != nil {
		t.Fatalf("terraform is not on the PATH (%v): the end-to-end tests need the real terraform CLI (1.x); install it and run again", terraformErr)
	}
	return terraformBin
}
