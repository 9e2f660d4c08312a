package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// concurrentPublishes is how many publishes of one version run at once.
const concurrentPublishes = 50

// publishBackends start a Trove on each pair of backends: the embedded
// SQLite and files, and PostgreSQL and S3 (skipped without them, unless
// TROVE_REQUIRE_BACKENDS=1).
var publishBackends = []struct {
	name  string
	start func(t *testing.T) *trovetest.Server
}{
	{"SQLiteFiles", func(t *testing.T) *trovetest.Server { return trovetest.Start(t) }},
	{"PostgresS3", func(t *testing.T) *trovetest.Server {
		return trovetest.Start(t, trovetest.Options{PostgresDSN: pgtest.NewSchema(t), S3: s3test.NewBucket(t)})
	}},
}

// publishKind is one kind of publish. prepare readies version of s for
// it and returns its uploads: upload(i) is the request of publisher i,
// the same bytes for every i when identical, other bytes for each i
// otherwise. stored reads the digest the index keeps for the version,
// and digestOf the digest upload i would store. identicalOnly leaves the
// kind out of the test of different bytes.
type publishKind struct {
	name          string
	prepare       func(t *testing.T, s *trovetest.Server, version string, identical bool) (upload func(i int) (*http.Request, error), digestOf func(i int) string)
	stored        func(t *testing.T, s *trovetest.Server, version string) string
	identicalOnly bool
}

var publishKinds = []publishKind{
	providerKind("Provider", "acme", false),
	// Trove signs each of these publishes itself, so their signatures
	// differ: only SHA256SUMS decides whether two are the same release.
	providerKind("ProviderManagedKey", "managed", true),
	{
		name: "Module",
		prepare: func(t *testing.T, s *trovetest.Server, version string, identical bool) (func(int) (*http.Request, error), func(int) string) {
			archives := make([][]byte, concurrentPublishes)
			for i := range archives {
				if i > 0 && identical {
					archives[i] = archives[0]
					continue
				}
				archives[i] = moduleArchive(t, map[string]string{
					"main.tf":   fmt.Sprintf("variable \"cidr\" {\n  default = \"10.%d.0.0/16\"\n}\n", i),
					"README.md": "# Network\n",
				})
			}
			return func(i int) (*http.Request, error) {
					req, err := http.NewRequest("POST", s.URL+"/api/v1/namespaces/acme/modules/net/aws/versions/"+version, bytes.NewReader(archives[i]))
					if err == nil {
						req.Header.Set("Content-Type", apispec.ModuleArchiveTarGz)
					}
					return req, err
				},
				func(i int) string { return digest(archives[i]) }
		},
		stored: func(t *testing.T, s *trovetest.Server, version string) string {
			v, err := s.Index.GetModuleVersion(t.Context(), "acme", "net", "aws", version)
			if err != nil {
				t.Fatal(err)
			}
			return v.ArchiveDigest
		},
	},
	{
		name: "ProviderDocs",
		prepare: func(t *testing.T, s *trovetest.Server, version string, identical bool) (func(int) (*http.Request, error), func(int) string) {
			createVersion(t, s, "acme", "docs", version)
			archives := make([][]byte, concurrentPublishes)
			for i := range archives {
				if i > 0 && identical {
					archives[i] = archives[0]
					continue
				}
				archives[i] = testarchive.TarGz(t, map[string]string{
					"docs/index.md":            fmt.Sprintf("# Docs\n\nEdition %d.\n", i),
					"docs/resources/widget.md": "# widget\n",
				})
			}
			path := strings.NewReplacer("{namespace}", "acme", "{type}", "docs", "{version}", version).Replace(apispec.RouteProviderDocs)
			return func(i int) (*http.Request, error) {
					return http.NewRequest("PUT", s.URL+path, bytes.NewReader(archives[i]))
				},
				func(i int) string { return digest(archives[i]) }
		},
		stored: func(t *testing.T, s *trovetest.Server, version string) string {
			v, err := s.Index.GetProviderVersion(t.Context(), "acme", "docs", version)
			if err != nil {
				t.Fatal(err)
			}
			return v.DocsDigest
		},
	},
}

// providerKind publishes releases of provider namespace/cloud, signed by
// a key of the namespace, or without a signature for its managed key to
// sign (only identical ones: signing is slow, and the unmanaged kind
// covers other bytes).
func providerKind(name, namespace string, managed bool) publishKind {
	return publishKind{
		name:          name,
		identicalOnly: managed,
		prepare: func(t *testing.T, s *trovetest.Server, version string, identical bool) (func(int) (*http.Request, error), func(int) string) {
			if _, err := s.Index.GetNamespace(t.Context(), namespace); registry.IsKind(err, registry.NotFound) {
				if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: namespace, CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			key := signingtest.NewKey(t, namespace)
			addKey, _ := json.Marshal(apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic})
			if managed {
				addKey = []byte(generateBody)
			}
			if status, body := apiDo(t, s, "POST", "/api/v1/namespaces/"+namespace+"/keys", "Bearer "+s.AdminToken, "application/json", bytes.NewReader(addKey)); status != 201 {
				t.Fatalf("adding the signing key = %d %s", status, body)
			}
			bodies, types, sums := make([][]byte, concurrentPublishes), make([]string, concurrentPublishes), make([]string, concurrentPublishes)
			for i := range bodies {
				if i > 0 && identical {
					bodies[i], types[i], sums[i] = bodies[0], types[0], sums[0]
					continue
				}
				spec := releasetest.Spec{Type: "cloud", Version: version, Platforms: []string{"linux_amd64", "darwin_arm64"}, Protocols: []string{"6.0"}}
				if !identical {
					spec.Payload = fmt.Sprint(i)
				}
				rel := releasetest.Build(t, key, spec)
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				for _, f := range rel.Files {
					if managed && strings.HasSuffix(f.Name, ".sig") {
						continue
					}
					w, err := mw.CreateFormFile(apispec.PublishFileField, f.Name)
					if err != nil {
						t.Fatal(err)
					}
					w.Write(f.Data)
				}
				mw.Close()
				bodies[i], types[i], sums[i] = body.Bytes(), mw.FormDataContentType(), rel.SHA256(rel.Prefix()+"_SHA256SUMS")
			}
			return func(i int) (*http.Request, error) {
					req, err := http.NewRequest("POST", s.URL+"/api/v1/namespaces/"+namespace+"/providers/cloud/versions/"+version, bytes.NewReader(bodies[i]))
					if err == nil {
						req.Header.Set("Content-Type", types[i])
					}
					return req, err
				},
				func(i int) string { return sums[i] }
		},
		stored: func(t *testing.T, s *trovetest.Server, version string) string {
			v, err := s.Index.GetProviderVersion(t.Context(), namespace, "cloud", version)
			if err != nil {
				t.Fatal(err)
			}
			return v.SHASumsDigest
		},
	}
}

// publishAnswer is what one concurrent publish was answered.
type publishAnswer struct {
	status  int
	created bool
	body    string
}

// publishTogether sends the concurrentPublishes requests of upload at
// once, each from its own goroutine and connection, and returns the
// answers in the order of i.
func publishTogether(t *testing.T, s *trovetest.Server, token string, upload func(i int) (*http.Request, error)) []publishAnswer {
	t.Helper()
	answers := make([]publishAnswer, concurrentPublishes)
	errs := make([]error, concurrentPublishes)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range concurrentPublishes {
		req, err := upload(i)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", token)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := s.HTTPClient().Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				errs[i] = err
				return
			}
			answers[i] = publishAnswer{status: resp.StatusCode, body: string(raw)}
			if resp.StatusCode/100 == 2 {
				var doc struct {
					Created *bool `json:"created"`
				}
				if err := json.Unmarshal(raw, &doc); err != nil || doc.Created == nil {
					errs[i] = fmt.Errorf("answer %d %s has no created field (%v)", resp.StatusCode, raw, err)
					return
				}
				answers[i].created = *doc.Created
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	return answers
}

// TestConcurrentIdenticalPublishesAreIdempotent sends the same provider
// release, module archive or documentation archive 50 times at once
// through the API, as retried CI jobs may: every publish succeeds,
// exactly one with 201 and created true, every other with 200 and created
// false, on both pairs of backends.
func TestConcurrentIdenticalPublishesAreIdempotent(t *testing.T) {
	for _, b := range publishBackends {
		t.Run(b.name, func(t *testing.T) {
			s := b.start(t)
			if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			for _, k := range publishKinds {
				t.Run(k.name, func(t *testing.T) {
					upload, digestOf := k.prepare(t, s, "1.0.0", true)
					answers := publishTogether(t, s, "Bearer "+s.AdminToken, upload)
					created := 0
					for i, a := range answers {
						switch {
						case a.status == http.StatusCreated && a.created:
							created++
						case a.status == http.StatusOK && !a.created:
						default:
							t.Errorf("publish %d = %d created %v %s, want 201 created true or 200 created false", i, a.status, a.created, a.body)
						}
					}
					if created != 1 {
						t.Errorf("%d of %d identical publishes answered created, want exactly 1", created, concurrentPublishes)
					}
					if got, want := k.stored(t, s, "1.0.0"), digestOf(0); got != want {
						t.Errorf("the index keeps digest %s, want the published %s", got, want)
					}
				})
			}
		})
	}
}

// TestConcurrentDifferentPublishesConflict sends 50 different provider
// releases, module archives or documentation archives for one version at
// once: exactly one is stored and answered 201, every other 409, on both
// pairs of backends.
func TestConcurrentDifferentPublishesConflict(t *testing.T) {
	for _, b := range publishBackends {
		t.Run(b.name, func(t *testing.T) {
			s := b.start(t)
			if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			for _, k := range publishKinds {
				if k.identicalOnly {
					continue
				}
				t.Run(k.name, func(t *testing.T) {
					upload, digestOf := k.prepare(t, s, "2.0.0", false)
					answers := publishTogether(t, s, "Bearer "+s.AdminToken, upload)
					winner := -1
					for i, a := range answers {
						switch {
						case a.status == http.StatusCreated && a.created && winner < 0:
							winner = i
						case a.status == http.StatusCreated:
							t.Errorf("publishes %d and %d both answered 201", winner, i)
						case a.status != http.StatusConflict:
							t.Errorf("publish %d = %d %s, want 201 for one and 409 for the others", i, a.status, a.body)
						}
					}
					if winner < 0 {
						t.Fatal("no publish answered 201")
					}
					if got, want := k.stored(t, s, "2.0.0"), digestOf(winner); got != want {
						t.Errorf("the index keeps digest %s, want that of the publish answered 201, %s", got, want)
					}
				})
			}
		})
	}
}
