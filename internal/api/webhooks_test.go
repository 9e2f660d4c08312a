package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/webhook"
)

func jsonReader(v any) io.Reader {
	raw, _ := json.Marshal(v)
	return bytes.NewReader(raw)
}

func TestWebhookAuthorization(t *testing.T) {
	s, tokens := setup(t)
	create := func(p, ns string) int {
		status, _ := apiDo(t, s, "POST", apispec.RouteWebhooks, tokens[p], "application/json",
			jsonReader(apispec.CreateWebhookRequest{Namespace: ns, URL: "https://hooks.example/trove"}))
		return status
	}
	allowedNS := map[string]bool{acmeAdmin: true, globalAdmin: true, userAdmin: true, userGlobal: true}
	allowedGlobal := map[string]bool{globalAdmin: true, userGlobal: true}
	for _, p := range append(append([]string{}, principals...), userPrincipals...) {
		got := create(p, "acme")
		if allowedNS[p] != (got == http.StatusCreated) || (!allowedNS[p] && got != 401 && got != 403 && got != 404) {
			t.Errorf("%s: create in acme = %d", p, got)
		}
		got = create(p, "")
		if allowedGlobal[p] != (got == http.StatusCreated) || (!allowedGlobal[p] && got != 401 && got != 403) {
			t.Errorf("%s: create global = %d", p, got)
		}
	}
	var list apispec.WebhookList
	status, raw := apiDo(t, s, "GET", apispec.RouteWebhooks+"?namespace=acme", tokens[acmeAdmin], "", nil)
	if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Webhooks) != len(allowedNS) {
		t.Fatalf("list acme = %d %s, want %d webhooks", status, raw, len(allowedNS))
	}
	hook := list.Webhooks[0]
	if hook.Secret != "" || hook.Namespace != "acme" || !hook.Active || len(hook.Events) != 0 || hook.CreatedBy == "" {
		t.Errorf("listed webhook = %+v: want no secret, active, all events", hook)
	}
	for p, want := range map[string]int{acmeAdmin: 200, userAdmin: 200, globalAdmin: 200, acmeRead: 403, acmePublish: 403, otherAdmin: 404, userOther: 404, none: 401} {
		if status, raw := apiDo(t, s, "GET", "/api/v1/webhooks/"+hook.ID, tokens[p], "", nil); status != want {
			t.Errorf("%s: get = %d %s, want %d", p, status, raw, want)
		}
		if status, raw := apiDo(t, s, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries", tokens[p], "", nil); status != want {
			t.Errorf("%s: deliveries = %d %s, want %d", p, status, raw, want)
		}
	}
	if status, raw := apiDo(t, s, "GET", apispec.RouteWebhooks, tokens[acmeAdmin], "", nil); status != 403 {
		t.Errorf("acme admin lists the global webhooks = %d %s, want 403", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/webhooks/"+hook.ID, tokens[otherAdmin], "", nil); status != 404 {
		t.Errorf("other admin deletes = %d %s, want 404", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/webhooks/"+hook.ID, tokens[acmeAdmin], "", nil); status != 204 {
		t.Errorf("delete = %d %s", status, raw)
	}
	if status, _ := apiDo(t, s, "GET", "/api/v1/webhooks/"+hook.ID, tokens[acmeAdmin], "", nil); status != 404 {
		t.Errorf("get after delete = %d, want 404", status)
	}
	for _, id := range []string{"wh_xyz", "..%2Fnamespaces", strings.Repeat("a", 40)} {
		if status, raw := apiDo(t, s, "GET", "/api/v1/webhooks/"+id, tokens[globalAdmin], "", nil); status != 400 || !strings.Contains(string(raw), `"errors"`) {
			t.Errorf("get %q = %d %s, want 400 with errors", id, status, raw)
		}
	}
}

// TestWebhookHostileInput sends target URLs and fields a Trove must
// refuse: each is answered 400 with a JSON error, and nothing is stored.
func TestWebhookHostileInput(t *testing.T) {
	s, tokens := setup(t)
	admin := tokens[acmeAdmin]
	tests := map[string]struct {
		req  apispec.CreateWebhookRequest
		want string
	}{
		"file URL":          {apispec.CreateWebhookRequest{URL: "file:///etc/passwd"}, "want an https:// URL"},
		"ftp URL":           {apispec.CreateWebhookRequest{URL: "ftp://hooks.example/x"}, "want an https:// URL"},
		"gopher URL":        {apispec.CreateWebhookRequest{URL: "gopher://hooks.example:70/x"}, "want an https:// URL"},
		"http URL":          {apispec.CreateWebhookRequest{URL: "http://hooks.example/x"}, "is not https"},
		"user information":  {apispec.CreateWebhookRequest{URL: "https://user:secret@hooks.example/x"}, "user information"},
		"huge URL":          {apispec.CreateWebhookRequest{URL: "https://hooks.example/" + strings.Repeat("a", 5000)}, "webhook URL"},
		"loopback":          {apispec.CreateWebhookRequest{URL: "https://127.0.0.1:8443/x"}, "non-public address"},
		"IPv6 loopback":     {apispec.CreateWebhookRequest{URL: "https://[::1]/x"}, "non-public address"},
		"mapped loopback":   {apispec.CreateWebhookRequest{URL: "https://[::ffff:127.0.0.1]/x"}, "non-public address"},
		"cloud metadata":    {apispec.CreateWebhookRequest{URL: "https://169.254.169.254/latest/meta-data"}, "non-public address"},
		"private network":   {apispec.CreateWebhookRequest{URL: "https://10.1.2.3/x"}, "non-public address"},
		"localhost":         {apispec.CreateWebhookRequest{URL: "https://localhost/x"}, "localhost"},
		"localhost root":    {apispec.CreateWebhookRequest{URL: "https://localhost.:8443/x"}, "localhost"},
		"under localhost":   {apispec.CreateWebhookRequest{URL: "https://Trove.LOCALHOST./x"}, "localhost"},
		"short loopback":    {apispec.CreateWebhookRequest{URL: "https://127.1/x"}, "non-standard form"},
		"decimal loopback":  {apispec.CreateWebhookRequest{URL: "https://2130706433/x"}, "non-standard form"},
		"no host":           {apispec.CreateWebhookRequest{URL: "https:///x"}, "no host"},
		"relative":          {apispec.CreateWebhookRequest{URL: "/x"}, "want an https:// URL"},
		"newline":           {apispec.CreateWebhookRequest{URL: "https://hooks.example/\r\nX: y"}, "webhook URL"},
		"unknown event":     {apispec.CreateWebhookRequest{URL: "https://hooks.example/x", Events: []string{"provider.exploded"}}, "unknown event type"},
		"short secret":      {apispec.CreateWebhookRequest{URL: "https://hooks.example/x", Secret: "short"}, "at least 16"},
		"secret with space": {apispec.CreateWebhookRequest{URL: "https://hooks.example/x", Secret: "0123456789 abcdef"}, "printable ASCII"},
		"unknown namespace": {apispec.CreateWebhookRequest{Namespace: "Bad Name!", URL: "https://hooks.example/x"}, "namespace"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			status, raw := apiDo(t, s, "POST", apispec.RouteWebhooks, admin, "application/json", jsonReader(func() apispec.CreateWebhookRequest {
				if tt.req.Namespace == "" {
					tt.req.Namespace = "acme"
				}
				return tt.req
			}()))
			var doc struct {
				Errors []string `json:"errors"`
			}
			if status != 400 || json.Unmarshal(raw, &doc) != nil || len(doc.Errors) == 0 || !strings.Contains(doc.Errors[0], tt.want) {
				t.Errorf("create = %d %s, want 400 with an error containing %q", status, raw, tt.want)
			}
		})
	}
	if status, raw := apiDo(t, s, "POST", apispec.RouteWebhooks, admin, "application/json", strings.NewReader(`{"namespace":"acme","url":"https://hooks.example","unknown":1}`)); status != 400 {
		t.Errorf("unknown field = %d %s, want 400", status, raw)
	}
	for _, ns := range []string{"acme", ""} {
		hooks, err := s.Index.ListWebhooks(t.Context(), ns)
		if err != nil || len(hooks) != 0 {
			t.Errorf("after hostile requests, namespace %q has webhooks %+v (%v)", ns, hooks, err)
		}
	}
}

// sink is a webhook receiver that records what it gets and answers 200.
type sink struct {
	mu   sync.Mutex
	got  []sunk
	more chan struct{}
}

type sunk struct {
	header http.Header
	body   []byte
}

func newSink(t *testing.T) (*sink, *httptest.Server) {
	k := &sink{more: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.got = append(k.got, sunk{r.Header.Clone(), body})
		k.mu.Unlock()
		k.more <- struct{}{}
		w.Write([]byte("thanks"))
	}))
	t.Cleanup(srv.Close)
	return k, srv
}

// wait waits for n requests in all (a minute at most: a stuck delivery
// fails the test rather than hanging it).
func (k *sink) wait(t *testing.T, n int) []sunk {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		k.mu.Lock()
		got := append([]sunk(nil), k.got...)
		k.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-k.more:
		case <-deadline:
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

func TestWebhookDeliveryThroughAPI(t *testing.T) {
	s, tokens := setup(t, trovetest.Options{WebhookReceivers: true})
	pub, admin := tokens[acmePublish], tokens[acmeAdmin]
	k, srv := newSink(t)
	status, raw := apiDo(t, s, "POST", apispec.RouteWebhooks, admin, "application/json", jsonReader(apispec.CreateWebhookRequest{
		Namespace: "acme", URL: srv.URL + "/hook", Events: []string{"module.*"}, Description: "chat"}))
	var hook apispec.Webhook
	if status != 201 || json.Unmarshal(raw, &hook) != nil || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("create = %d %s, want 201 with a generated secret", status, raw)
	}
	// A provider event does not match the filter; module events do.
	path := "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0"
	if status, raw := apiDo(t, s, "POST", path, pub, apispec.ModuleArchiveTarGz, bytes.NewReader(moduleArchive(t, networkModule))); status != 201 {
		t.Fatalf("publish = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "PUT", path+"/deprecation", pub, "application/json", jsonReader(apispec.DeprecateRequest{Reason: "use 2.x"})); status != 200 {
		t.Fatalf("deprecate = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", path+"?confirm=acme/network/aws/1.0.0", admin, "", nil); status != 204 {
		t.Fatalf("delete = %d %s", status, raw)
	}
	got := k.wait(t, 3)
	var types []string
	for _, g := range got {
		if err := webhook.Verify(hook.Secret, g.header.Get(apispec.HeaderSignature), g.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature of %s: %v", g.body, err)
		}
		var p apispec.WebhookPayload
		if err := json.Unmarshal(g.body, &p); err != nil {
			t.Fatal(err)
		}
		types = append(types, p.Type)
		if p.Namespace != "acme" || p.Subject.Kind != "module" || p.Subject.Address != discovery.RegistryHost(s.URL)+"/acme/network/aws" || p.Version != "1.0.0" ||
			p.Actor == "" || p.ID != g.header.Get(apispec.HeaderEvent) {
			t.Errorf("payload = %+v", p)
		}
		if p.Type == registry.EventModuleDeprecated && p.Reason != "use 2.x" {
			t.Errorf("deprecation event without its reason: %+v", p)
		}
	}
	// Deliveries run one at a time per worker, oldest first.
	if strings.Join(types, " ") != "module.published module.deprecated module.deleted" {
		t.Errorf("events = %v, want publish, deprecate, delete in order", types)
	}

	// The log, a redelivery (same event, new delivery) and a ping.
	var list apispec.WebhookDeliveryList
	status, raw = apiDo(t, s, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries?limit=2", admin, "", nil)
	if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Deliveries) != 2 || list.Deliveries[0].EventType != registry.EventModuleDeleted {
		t.Fatalf("deliveries = %d %s, want the 2 newest", status, raw)
	}
	first := list.Deliveries[0]
	// The receiver answered; the worker records the attempt just after.
	var d apispec.WebhookDelivery
	deadline := time.Now().Add(time.Minute)
	for {
		status, raw = apiDo(t, s, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries/"+first.ID, admin, "", nil)
		if status != 200 || json.Unmarshal(raw, &d) != nil || d.State != registry.DeliveryPending || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status != 200 || d.State != registry.DeliverySucceeded || len(d.Log) != 1 ||
		d.Log[0].Status != 200 || d.Log[0].Response != "thanks" || d.Payload == nil || d.Payload.Type != registry.EventModuleDeleted {
		t.Errorf("delivery = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/webhooks/"+hook.ID+"/deliveries/"+first.ID+"/redeliver", admin, "", nil)
	var again apispec.WebhookDelivery
	if status != 202 || json.Unmarshal(raw, &again) != nil || again.ID == first.ID || again.EventID != first.EventID {
		t.Fatalf("redeliver = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/webhooks/"+hook.ID+"/test", admin, "", nil)
	if status != 202 {
		t.Fatalf("test = %d %s", status, raw)
	}
	got = k.wait(t, 5)
	if got[3].header.Get(apispec.HeaderEvent) != first.EventID || got[3].header.Get(apispec.HeaderDelivery) != again.ID || !bytes.Equal(got[3].body, got[2].body) {
		t.Errorf("the redelivery differs from the delivery: %v", got[3].header)
	}
	if got[4].header.Get(apispec.HeaderEventType) != registry.EventPing {
		t.Errorf("test sent %v, want a ping", got[4].header)
	}

	// Rotate the secret; deactivate; a deactivated webhook gets nothing
	// and refuses redeliveries.
	status, raw = apiDo(t, s, "PATCH", "/api/v1/webhooks/"+hook.ID, admin, "application/json", strings.NewReader(`{"rotate_secret": true, "active": false}`))
	var updated apispec.Webhook
	if status != 200 || json.Unmarshal(raw, &updated) != nil || updated.Secret == "" || updated.Secret == hook.Secret || updated.Active {
		t.Fatalf("update = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "POST", "/api/v1/webhooks/"+hook.ID+"/deliveries/"+first.ID+"/redeliver", admin, "", nil); status != 409 {
		t.Errorf("redeliver to an inactive webhook = %d %s, want 409", status, raw)
	}
	if status, raw := apiDo(t, s, "PATCH", "/api/v1/webhooks/"+hook.ID, admin, "application/json", strings.NewReader(`{"url": "file:///etc/passwd"}`)); status != 400 {
		t.Errorf("update to a file URL = %d %s, want 400", status, raw)
	}
	if h, _ := s.Index.GetWebhook(t.Context(), hook.ID); h.URL != srv.URL+"/hook" || h.Secret != updated.Secret {
		t.Errorf("stored webhook = %+v", h)
	}
	if events := auditEvents(t, s, registry.AuditWebhookCreate); len(events) != 1 || events[0].Target != hook.ID {
		t.Errorf("audit of the creation = %+v", events)
	}
}

// TestWebhookDeleteEvents: deleting a provider version, a whole provider
// and a whole module sends provider.deleted and module.deleted, the
// whole ones without a version.
func TestWebhookDeleteEvents(t *testing.T) {
	s, tokens := setup(t, trovetest.Options{WebhookReceivers: true})
	pub, admin := tokens[acmePublish], tokens[acmeAdmin]
	k, srv := newSink(t)
	status, raw := apiDo(t, s, "POST", apispec.RouteWebhooks, admin, "application/json", jsonReader(apispec.CreateWebhookRequest{
		Namespace: "acme", URL: srv.URL + "/hook", Events: []string{registry.EventProviderDeleted, registry.EventModuleDeleted}}))
	var hook apispec.Webhook
	if status != 201 || json.Unmarshal(raw, &hook) != nil {
		t.Fatalf("create = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0", pub, apispec.ModuleArchiveTarGz,
		bytes.NewReader(moduleArchive(t, networkModule))); status != 201 {
		t.Fatalf("publish = %d %s", status, raw)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pv := registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now(),
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-cloud_" + v + "_linux_amd64.zip", SHA256: stored(t, s, "a"), Size: 1}}}
		if err := s.Index.CreateProviderVersion(t.Context(), pv); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{
		"/api/v1/namespaces/acme/providers/cloud/versions/1.1.0?confirm=acme/cloud/1.1.0",
		"/api/v1/namespaces/acme/providers/cloud?confirm=acme/cloud",
		"/api/v1/namespaces/acme/modules/network/aws?confirm=acme/network/aws",
	} {
		if status, raw := apiDo(t, s, "DELETE", path, admin, "", nil); status/100 != 2 {
			t.Fatalf("DELETE %s = %d %s", path, status, raw)
		}
	}
	var got []string
	for _, g := range k.wait(t, 3) {
		if err := webhook.Verify(hook.Secret, g.header.Get(apispec.HeaderSignature), g.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("signature of %s: %v", g.body, err)
		}
		var p apispec.WebhookPayload
		if err := json.Unmarshal(g.body, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Type+" "+p.Subject.Address+" "+p.Version)
	}
	want := []string{
		"provider.deleted " + discovery.RegistryHost(s.URL) + "/acme/cloud 1.1.0",
		"provider.deleted " + discovery.RegistryHost(s.URL) + "/acme/cloud ",
		"module.deleted " + discovery.RegistryHost(s.URL) + "/acme/network/aws ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
