package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestConsumerReports downloads through the protocols as several
// consumers and clients and reads the reports: at once on the same
// server (pending records) and from the index after a flush; then the
// refusals of bad input and of callers without publish rights.
func TestConsumerReports(t *testing.T) {
	s := trovetest.Start(t)
	seedDownloads(t, s)
	if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "other", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	hc := s.HTTPClient()
	pub := mint(t, s, "acme", registry.ScopePublish, nil)
	read := mint(t, s, "acme", registry.ScopeRead, nil)
	other := mint(t, s, "other", registry.ScopeAdmin, nil)

	download := func(path, token, agent string, want int) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("User-Agent", agent)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	const providerDoc = "/v1/providers/acme/widget/1.0.0/download/linux/amd64"
	for range 3 {
		download(providerDoc, read, "Terraform/1.9.5 (+https://www.terraform.io)", http.StatusOK)
	}
	download(providerDoc, "", "OpenTofu/1.12.6", http.StatusOK)
	download(providerDoc, "", "curl/8.0 <script>", http.StatusOK)
	download("/v1/modules/acme/net/aws/1.0.0/download", pub, "OpenTofu/1.12.6", http.StatusNoContent)

	report := func(path, token string, want int) (apispec.ConsumerReport, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatalf("GET %s: %d with a body that is not JSON: %v", path, resp.StatusCode, err)
		}
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, raw, want)
		}
		var r apispec.ConsumerReport
		if want == http.StatusOK {
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
		}
		return r, string(raw)
	}
	const providerReport = "/api/v1/namespaces/acme/providers/widget/consumers"
	const moduleReport = "/api/v1/namespaces/acme/modules/net/aws/consumers"
	check := func(when string) {
		t.Helper()
		r, raw := report(providerReport, pub, http.StatusOK)
		if r.Downloads != 5 || len(r.Consumers) != 2 {
			t.Fatalf("%s: provider report %s; want 5 downloads by 2 consumers", when, raw)
		}
		if c := r.Consumers[0]; !strings.HasPrefix(c.Consumer, "token:") || c.Downloads != 3 ||
			len(c.Clients) != 1 || c.Clients[0] != "terraform 1.9.5" || len(c.Versions) != 1 || c.Versions[0] != "1.0.0" {
			t.Errorf("%s: first consumer %+v; want the read token with 3 downloads by terraform 1.9.5", when, c)
		}
		if c := r.Consumers[1]; c.Consumer != registry.AnonymousConsumer || c.Downloads != 2 ||
			strings.Join(c.Clients, ",") != "opentofu 1.12.6,other" {
			t.Errorf("%s: second consumer %+v; want anonymous with opentofu 1.12.6 and other (no free text of the agent)", when, c)
		}
		m, raw := report(moduleReport, pub, http.StatusOK)
		if m.Downloads != 1 || len(m.Consumers) != 1 || m.Consumers[0].Clients[0] != "opentofu 1.12.6" {
			t.Errorf("%s: module report %s; want 1 download by opentofu 1.12.6", when, raw)
		}
		if r, raw := report(providerReport+"?versions=%3E%3D2.0&days=7", pub, http.StatusOK); r.Downloads != 0 || len(r.Consumers) != 0 {
			t.Errorf("%s: report of versions >= 2.0: %s; want none", when, raw)
		}
	}
	check("before a flush")
	if err := s.Downloads.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("after a flush")

	// The pages draw the downloads by day and version (no identities).
	for path, want := range map[string]string{"/providers/acme/widget": "5 downloads from", "/modules/acme/net/aws": "1 downloads from"} {
		status, body := get(t, hc, s.URL, path)
		if status != http.StatusOK || !strings.Contains(string(body), "<svg") || !strings.Contains(string(body), want) ||
			strings.Contains(string(body), "token:") {
			t.Errorf("GET %s: %d; want a downloads chart saying %q and naming no consumer", path, status, want)
		}
	}

	for _, c := range []struct {
		path, token string
		want        int
	}{
		{providerReport, read, http.StatusForbidden},  // a reader may not learn who else downloads
		{providerReport, other, http.StatusForbidden}, // nor another namespace's admin (acme is public)
		{providerReport, "", http.StatusUnauthorized}, // the API needs a token
		{providerReport + "?days=0", pub, http.StatusBadRequest},
		{providerReport + "?days=367", pub, http.StatusBadRequest},
		{providerReport + "?days=-1", pub, http.StatusBadRequest},
		{providerReport + "?days=30d", pub, http.StatusBadRequest},
		{providerReport + "?days=99999999999999999999", pub, http.StatusBadRequest},
		{providerReport + "?versions=not%20a%20constraint", pub, http.StatusBadRequest},
		{providerReport + "?versions=" + strings.Repeat("1", 5000), pub, http.StatusBadRequest},
		{"/api/v1/namespaces/acme/providers/Bad_Type!/consumers", pub, http.StatusBadRequest},
		{"/api/v1/namespaces/acme/modules/net/AWS%20X/consumers", pub, http.StatusBadRequest},
		{"/api/v1/namespaces/nobody/providers/widget/consumers", pub, http.StatusNotFound},
	} {
		report(c.path, c.token, c.want)
	}
}

// TestConsumerReportDefaultWiring builds the API with New's own
// operations, as tests and embedders do, and a download counter holding a
// record not flushed yet: the report shows it, as `trove serve`'s does.
func TestConsumerReportDefaultWiring(t *testing.T) {
	s := trovetest.Start(t)
	seedDownloads(t, s)
	counter, err := downloads.New(downloads.Options{Store: s.Index, Consumers: true})
	if err != nil {
		t.Fatal(err)
	}
	k := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	k.Day, k.Consumer, k.Client, k.ClientVersion = registry.DayOf(time.Now()), "user:pending", registry.ClientOpenTofu, "1.12.6"
	counter.Add(k)
	ts := httptest.NewServer(api.New(api.Options{Index: s.Index, Auth: auth.NewAuthenticator(s.Index), Downloads: counter}))
	t.Cleanup(ts.Close)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/namespaces/acme/providers/widget/consumers", nil)
	req.Header.Set("Authorization", "Bearer "+mint(t, s, "acme", registry.ScopePublish, nil))
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r apispec.ConsumerReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d, %v", resp.StatusCode, err)
	}
	if r.Downloads != 1 || len(r.Consumers) != 1 || r.Consumers[0].Consumer != "user:pending" {
		t.Errorf("report %+v; want the pending download of user:pending", r)
	}
}
