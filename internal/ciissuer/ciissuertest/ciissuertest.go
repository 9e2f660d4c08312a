// Package ciissuertest starts the stand-in CI issuer (trove-ci-issuer,
// package ciissuer) as a process on loopback for tests, built once per
// test binary.
package ciissuertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/ciissuer"
)

// Process is a running issuer.
type Process struct {
	// URL is the issuer (the iss of its tokens), http://127.0.0.1:<port>.
	URL string
	// RequestURL is what GitHub Actions puts in
	// ACTIONS_ID_TOKEN_REQUEST_URL: the token endpoint with a query, to
	// which clients append "&audience=...".
	RequestURL string
	// RequestToken is ACTIONS_ID_TOKEN_REQUEST_TOKEN.
	RequestToken string
}

var build struct {
	once sync.Once
	bin  string
	err  error
}

// binary builds trove-ci-issuer once per test process into a directory
// of the temporary directory shared by every test process of the user.
func binary() (string, error) {
	build.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %v", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		// One directory per user, not one per test process: the test
		// binaries that use the issuer run at once and would each leave a
		// directory behind. Each builds to a name of its own and renames
		// it into place, so none sees another's half-written binary.
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("trove-ci-issuer-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			build.err = err
			return
		}
		bin := filepath.Join(dir, "trove-ci-issuer")
		tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "./internal/ciissuer/cmd/trove-ci-issuer")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			build.err = fmt.Errorf("building trove-ci-issuer: %v\n%s", err, out)
			return
		}
		if err := os.Rename(tmp, bin); err != nil {
			os.Remove(tmp)
			build.err = err
			return
		}
		build.bin = bin
	})
	return build.bin, build.err
}

// Start builds (once) and starts the issuer process; it is killed when
// the test ends.
func Start(t testing.TB) *Process {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	p := &Process{}
	lines := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for p.RequestToken == "" && sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			switch k {
			case "issuer":
				p.URL = v
			case "request-token":
				p.RequestToken = v
			}
		}
		lines <- sc.Err()
	}()
	select {
	case err := <-lines:
		if err != nil || p.URL == "" || p.RequestToken == "" {
			t.Fatalf("trove-ci-issuer did not announce itself (%v)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("trove-ci-issuer did not start within 30 s")
	}
	p.RequestURL = p.URL + ciissuer.TokenPath + "?api-version=2.0"
	return p
}

// Mint asks the process for a token with the claims and mode q chooses
// (the ciissuer.Param constants).
func (p *Process) Mint(t testing.TB, q url.Values) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.RequestURL+"&"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "bearer "+p.RequestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Value string `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK || doc.Value == "" {
		t.Fatalf("minting a token (%s): status %d, %v", q.Encode(), resp.StatusCode, err)
	}
	return doc.Value
}
