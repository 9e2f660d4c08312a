package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/webhook"
)

// The environment of the child process of TestCrashAfterCommit.
const (
	envCrashBackend = "TROVE_TEST_CRASH_BACKEND"
	envCrashDSN     = "TROVE_TEST_CRASH_DSN"
	envCrashToken   = "TROVE_TEST_CRASH_TOKEN"
)

// crashExit is the exit code of a child that died right after the commit.
const crashExit = 3

func openCrashIndex(t *testing.T, backend, dsn string) store.Index {
	t.Helper()
	var x store.Index
	var err error
	if backend == "postgres" {
		x, err = postgres.Open(context.Background(), dsn)
	} else {
		x, err = sqlite.Open(context.Background(), dsn)
	}
	if err != nil {
		t.Fatalf("opening the %s index: %v", backend, err)
	}
	return x
}

// TestCrashAfterCommit deletes a provider version through the API in a
// child process that dies right after the index committed the delete,
// before the handler returns, and checks that the delete's audit entry
// and its webhook outbox row were committed with it, and that the
// webhook worker then delivers the event. (With the audit entry and the
// event written after the change, in a second step, both are lost.)
func TestCrashAfterCommit(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var dsn string
			if backend == "postgres" {
				dsn = pgtest.NewSchema(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "index.db")
			}
			var mu sync.Mutex
			var got []apispec.WebhookPayload
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var p apispec.WebhookPayload
				if err := json.Unmarshal(body, &p); err != nil {
					t.Errorf("receiver: %v in %s", err, body)
				}
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			}))
			defer receiver.Close()

			// Seed a provider version, an admin token and a webhook.
			x := openCrashIndex(t, backend, dsn)
			ctx := context.Background()
			now := time.Now().UTC()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}))
			v := registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: "1.0.0", Protocols: []string{"6.0"},
				SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: "00112233445566778899AABB0123456789ABCDEF",
					ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nx\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: now},
				SHASumsDigest: "sha256:" + hex64('a'), SHASumsSignatureDigest: "sha256:" + hex64('b'), PublishedAt: now}
			must(x.AddSigningKey(ctx, v.SigningKey))
			must(x.CreateProviderVersion(ctx, v))
			secret, hash, err := auth.NewToken()
			must(err)
			id, _ := auth.NewID()
			must(x.CreateToken(ctx, registry.Token{ID: id, Hash: hash, Scopes: []registry.Scope{registry.ScopeAdmin}, CreatedAt: now}))
			hook := registry.Webhook{ID: "wh_0000000000000001", Namespace: "acme", URL: receiver.URL, Events: []string{registry.EventProviderDeleted},
				Secret: "0123456789abcdef0123", Active: true, CreatedAt: now, CreatedBy: "user:alice"}
			must(x.CreateWebhook(ctx, hook))
			must(x.Close())

			// The child deletes the version and dies right after the commit.
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashAfterCommitChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), envCrashBackend+"="+backend, envCrashDSN+"="+dsn, envCrashToken+"="+secret)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != crashExit {
				t.Fatalf("the child did not die after the commit (%v):\n%s", err, out)
			}

			x = openCrashIndex(t, backend, dsn)
			defer x.Close()
			if _, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
				t.Fatalf("GetProviderVersion after the crash = %v, want NotFound: the delete committed", err)
			}
			audit, err := x.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditProviderDelete})
			must(err)
			if len(audit) != 1 || audit[0].Target != "acme/cloud 1.0.0" || audit[0].Actor != "token:"+id {
				t.Errorf("audit log after the crash = %+v, want the delete of acme/cloud 1.0.0 by token:%s", audit, id)
			}
			ds, err := x.ListWebhookDeliveries(ctx, hook.ID, 10)
			must(err)
			if len(ds) != 1 || ds[0].EventType != registry.EventProviderDeleted || ds[0].State != registry.DeliveryPending {
				t.Fatalf("webhook outbox after the crash = %+v, want one pending provider.deleted delivery", ds)
			}

			// A worker started after the crash delivers the event.
			w, err := webhook.NewWorker(webhook.WorkerOptions{Store: x, AllowPrivate: true})
			must(err)
			n, err := w.RunOnce(ctx)
			must(err)
			d, err := x.GetWebhookDelivery(ctx, hook.ID, ds[0].ID)
			must(err)
			mu.Lock()
			defer mu.Unlock()
			if n != 1 || d.State != registry.DeliverySucceeded || len(got) != 1 {
				t.Fatalf("after RunOnce: %d attempted, delivery %s, %d received; want the one delivery to succeed", n, d.State, len(got))
			}
			p := got[0]
			if p.Type != registry.EventProviderDeleted || p.Namespace != "acme" || p.Subject.Name != "cloud" || p.Version != "1.0.0" ||
				p.Actor != "token:"+id || p.ID != d.EventID {
				t.Errorf("delivered payload = %+v, want provider.deleted of acme/cloud 1.0.0 by token:%s, event %s", p, id, d.EventID)
			}
		})
	}
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// crashingIndex makes the process die right after DeleteProviderVersion
// committed.
type crashingIndex struct{ store.Index }

func (c crashingIndex) DeleteProviderVersion(ctx context.Context, namespace, typ, version string) error {
	err := c.Index.DeleteProviderVersion(ctx, namespace, typ, version)
	if err == nil {
		os.Exit(crashExit)
	}
	return err
}

// TestCrashAfterCommitChild is the child process of TestCrashAfterCommit.
func TestCrashAfterCommitChild(t *testing.T) {
	backend := os.Getenv(envCrashBackend)
	if backend == "" {
		t.Skip("the child process of TestCrashAfterCommit")
	}
	x := openCrashIndex(t, backend, os.Getenv(envCrashDSN))
	h := api.New(api.Options{Index: crashingIndex{x}, Auth: auth.NewAuthenticator(x),
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: x})})
	r := httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/acme/providers/cloud/versions/1.0.0?confirm=acme/cloud/1.0.0", nil)
	r.Header.Set("Authorization", "Bearer "+os.Getenv(envCrashToken))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	t.Fatalf("the delete returned %d %s without the crash", w.Code, w.Body)
}
