package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/signing/signingtest"
)

// slowUpstream is a providers.v1 registry on loopback serving one signed
// release; until release is closed, an archive download sends half the
// archive and then stalls, so that a test can kill the mirror mid-fetch.
type slowUpstream struct {
	srv     *httptest.Server
	started chan struct{} // closed when an archive download has sent half
	release chan struct{} // closed to let archive downloads finish
	once    sync.Once
}

func newSlowUpstream(t *testing.T, rel *dist, key *signingtest.Key) *slowUpstream {
	t.Helper()
	u := &slowUpstream{started: make(chan struct{}), release: make(chan struct{})}
	mux := http.NewServeMux()
	base := "/v1/providers/" + namespace + "/" + providerType + "/"
	mux.HandleFunc("GET "+base+"versions", func(w http.ResponseWriter, r *http.Request) {
		var platforms []map[string]string
		for _, p := range rel.Platforms {
			os, arch, _ := strings.Cut(p, "_")
			platforms = append(platforms, map[string]string{"os": os, "arch": arch})
		}
		json.NewEncoder(w).Encode(map[string]any{"versions": []any{map[string]any{"version": rel.Version, "protocols": []string{"5.0"}, "platforms": platforms}}})
	})
	mux.HandleFunc("GET "+base+rel.Version+"/download/{os}/{arch}", func(w http.ResponseWriter, r *http.Request) {
		name := rel.zipName(r.PathValue("os") + "_" + r.PathValue("arch"))
		json.NewEncoder(w).Encode(map[string]any{
			"protocols": []string{"5.0"}, "os": r.PathValue("os"), "arch": r.PathValue("arch"), "filename": name,
			"download_url": "/files/" + name, "shasums_url": "/files/" + rel.sumsName(), "shasums_signature_url": "/files/" + rel.sigName(),
			"shasum":       rel.zipDigest(t, r.PathValue("os")+"_"+r.PathValue("arch")),
			"signing_keys": map[string]any{"gpg_public_keys": []any{map[string]string{"key_id": key.KeyID, "ascii_armor": key.ArmoredPublic}}},
		})
	})
	mux.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(rel.path(r.PathValue("name")))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if !strings.HasSuffix(r.PathValue("name"), ".zip") {
			w.Write(data)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		u.once.Do(func() { close(u.started) })
		select {
		case <-u.release:
			w.Write(data[len(data)/2:])
		case <-r.Context().Done():
		}
	})
	u.srv = httptest.NewTLSServer(mux)
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
		u.srv.Close()
	})
	return u
}

// TestCrashDuringMirrorFetch kills the mirror (SIGKILL) while it fetches a
// package from its upstream, restarts it on the same data directory and
// checks that nothing of the package is kept (no blob, no staged file, not
// recorded as held), then that it installs once the upstream answers.
func TestCrashDuringMirrorFetch(t *testing.T) {
	requireTerraform(t)
	key := signingtest.NewKey(t, namespace)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	digest := rel.zipDigest(t, hostPlatform)
	up := newSlowUpstream(t, rel, key)
	ca := writeFile(t, t.TempDir(), "upstream-ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.srv.Certificate().Raw}))

	dataDir := filepath.Join(t.TempDir(), "mirror")
	m := startTrove(t, dataDir)
	m.mustCLI(t, m.AdminToken, "mirror", "upstream", "set", upstreamHost,
		"--service-url", up.srv.URL+"/v1/providers/", "--upstream-ca-file", ca, "--allow", namespace+"/*")
	versionPath := "/v1/mirror/" + upstreamHost + "/" + namespace + "/" + providerType + "/" + rel.Version + ".json"
	archiveURL := func(s *troveServer) (string, []string) {
		t.Helper()
		var doc struct {
			Archives map[string]struct {
				URL    string   `json:"url"`
				Hashes []string `json:"hashes"`
			} `json:"archives"`
		}
		s.getJSON(t, versionPath, s.AdminToken, &doc)
		a := doc.Archives[hostPlatform]
		return a.URL, a.Hashes
	}
	target, _ := archiveURL(m)

	fetched := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		resp, err := m.httpClient(t).Do(req)
		if err == nil { // the first half streams through at once; the rest never comes
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil {
				err = fmt.Errorf("the whole package arrived (status %d)", resp.StatusCode)
			}
		}
		fetched <- err
	}()
	select {
	case <-up.started:
	case err := <-fetched:
		t.Fatalf("the download through the mirror ended (%v) before the upstream sent half the package", err)
	case <-time.After(commandTimeout):
		t.Fatal("the mirror never asked the upstream for the package")
	}
	m.kill()
	<-fetched
	if left := stagedFiles(t, dataDir); !slices.ContainsFunc(left, func(n string) bool { return strings.HasPrefix(n, "mirror-") }) {
		t.Fatalf("no partial download staged when the mirror was killed (staging holds %q): the kill missed the fetch", left)
	}

	m2 := startTrove(t, dataDir)
	m2.AdminToken = m.AdminToken
	if p := findBlob(t, dataDir, digest); p != "" {
		t.Errorf("the interrupted package was stored as a blob: %s", p)
	}
	if left := stagedFiles(t, dataDir); len(left) > 0 {
		t.Errorf("staged files left by the killed fetch after a restart: %q", left)
	}
	if _, hashes := archiveURL(m2); len(hashes) != 1 || !strings.HasPrefix(hashes[0], "zh:") {
		t.Errorf("after the crash the package's hashes are %q: want its zh: alone (not held)", hashes)
	}

	close(up.release)
	forEachClient(t, func(t *testing.T, client string) {
		tf := newMirrorClient(t, client, m2)
		dir := writeMirrorProject(t, rel.Version, "after-crash")
		tf.mustRun(t, dir, "init", "-input=false")
	})
	if findBlob(t, dataDir, digest) == "" {
		t.Errorf("the mirror holds no blob %s after the install", digest)
	}
}
