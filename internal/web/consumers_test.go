package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// hostileCI is the consumer label of a CI pipeline whose repository and
// workflow names carry HTML: the label a keyless token of such claims
// records (registry.CIConsumer), shown escaped or not at all.
const hostileCI = `ci:<script>alert(1)</script>/infra (<img src=x onerror=alert(2)>.yml)`

// consumersEnv publishes acme/widget 1.0.0 and 1.1.0 and the module
// acme/network/aws 1.0.0, makes carol a publisher of acme, and downloads
// through the protocols: bob's token with Terraform 1.9.5 (provider 1.0.0
// three times, the module once with OpenTofu 1.12.6), anonymously with
// OpenTofu 1.12.6 (provider 1.1.0 twice), and, through the server's
// download counter as the protocol handler counts a keyless token, the
// pipeline hostileCI (provider 1.1.0 once, OpenTofu 1.12.6) on today,
// the UTC day the test computed once (registry.DayOf) and expects in the
// pages.
func consumersEnv(t *testing.T, today string) *env {
	t.Helper()
	e := start(t)
	ctx := context.Background()
	if _, err := e.admin.CreateUser(ctx, apispec.CreateUserRequest{Name: "carol", Password: password}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.SetMember(ctx, "acme", "carol", "publisher"); err != nil {
		t.Fatal(err)
	}
	e.publishProvider(t, "acme", "widget", "1.0.0", nil)
	e.publishProvider(t, "acme", "widget", "1.1.0", nil)
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	bob, err := e.admin.CreateToken(ctx, apispec.CreateTokenRequest{User: "bob", Scopes: []string{"read"}, Description: "bob's laptop"})
	if err != nil {
		t.Fatal(err)
	}
	download := func(path, token, agent string, want int) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("User-Agent", agent)
		resp, err := e.srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	for range 3 {
		download("/v1/providers/acme/widget/1.0.0/download/linux/amd64", bob.Secret, "Terraform/1.9.5 (+https://www.terraform.io)", http.StatusOK)
	}
	for range 2 {
		download("/v1/providers/acme/widget/1.1.0/download/darwin/arm64", "", "OpenTofu/1.12.6", http.StatusOK)
	}
	download("/v1/modules/acme/network/aws/1.0.0/download", bob.Secret, "OpenTofu/1.12.6", http.StatusNoContent)
	k := registry.ProviderDownload("acme", "widget", "1.1.0", "linux", "amd64")
	k.Day, k.Consumer, k.Client, k.ClientVersion = today, hostileCI, registry.ClientOpenTofu, "1.12.6"
	e.srv.Downloads.Add(k)
	return e
}

// consumerTraces are what a page must not contain for a visitor who may
// not see its consumers: the section, and any consumer's name.
var consumerTraces = []string{`id="consumers"`, "Consumers</h2>", "user:bob", "ci:", "alert(", `name="versions"`, "trove consumers"}

// TestConsumersSection reads the consumers section of provider and
// module pages as a publisher of the namespace, before and after the
// downloads are flushed to the index, and checks that readers, other
// namespaces' admins and anonymous visitors, asking right after the
// publisher (the page cache on, as always), get the page without it.
func TestConsumersSection(t *testing.T) {
	today := registry.DayOf(time.Now())
	e := consumersEnv(t, today)
	carol, bob, alice, anon := e.browser(t), e.browser(t), e.browser(t), e.browser(t)
	for who, b := range map[string]*browser{"carol": carol, "bob": bob, "alice": alice} {
		if p := b.signIn(who, password); p.status != http.StatusSeeOther {
			t.Fatalf("sign-in of %s: %d", who, p.status)
		}
	}
	pages := []struct {
		path string
		want []string
	}{
		{"/providers/acme/widget", []string{
			`<section id="consumers" aria-labelledby="consumers-h"><h2 id="consumers-h">Consumers</h2>`,
			"Every version, ", ": 6 downloads by 3 consumers.",
			"<tr><td><code>user:bob</code></td><td>3</td><td>" + today, // the server's clock: midnight aside
			"<td>1.0.0</td><td>terraform 1.9.5</td></tr>",
			"<tr><td><code>anonymous</code></td><td>2</td>",
			"<tr><td><code>ci:&lt;script&gt;alert(1)&lt;/script&gt;/infra (&lt;img src=x onerror=alert(2)&gt;.yml)</code></td><td>1</td>",
			"<li>opentofu 1.12.6: 3 downloads</li><li>terraform 1.9.5: 3 downloads</li>",
			`<input type="number" id="consumers-days" name="days" value="30" min="1" max="366"`,
			`action="/providers/acme/widget#consumers"`,
			"<code>trove consumers acme/widget</code>",
		}},
		{"/providers/acme/widget/1.0.0", []string{`action="/providers/acme/widget/1.0.0#consumers"`, ": 6 downloads by 3 consumers."}},
		{"/modules/acme/network/aws", []string{
			": 1 downloads by 1 consumer.",
			"<tr><td><code>user:bob</code></td><td>1</td>",
			"<li>opentofu 1.12.6: 1 downloads</li>",
			"<code>trove consumers acme/network/aws</code>",
		}},
	}
	check := func(when string) {
		t.Helper()
		for _, pg := range pages {
			p := carol.get(pg.path)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %s as its publisher: %d", when, pg.path, p.status)
			}
			for _, want := range pg.want {
				if !strings.Contains(p.body, want) {
					t.Errorf("%s: %s as its publisher lacks %q", when, pg.path, want)
				}
			}
			if strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "<img src=x") {
				t.Errorf("%s: %s shows a consumer's name unescaped", when, pg.path)
			}
			if p.header.Get("Content-Encoding") != "" || p.header.Get("Cache-Control") != "private, no-cache" {
				t.Errorf("%s: %s as its publisher: %v", when, pg.path, p.header)
			}
			// Right after: every other visitor, and the same page with
			// the form's parameters, even bad ones.
			for who, b := range map[string]*browser{"bob (a reader)": bob, "alice (admin of another namespace)": alice, "an anonymous visitor": anon} {
				for _, query := range []string{"", "?days=7&versions=%3E%3D1.0", "?days=-1&versions=%3Cscript%3E"} {
					p := b.get(pg.path + query)
					if p.status != http.StatusOK || !strings.Contains(p.body, "<h1>acme/") {
						t.Fatalf("%s: %s%s as %s: %d", when, pg.path, query, who, p.status)
					}
					for _, trace := range consumerTraces {
						if strings.Contains(p.body, trace) {
							t.Errorf("%s: %s%s as %s shows %q", when, pg.path, query, who, trace)
						}
					}
					if strings.Contains(p.body, "notice error") {
						t.Errorf("%s: %s%s as %s shows an error (a hint of the section)", when, pg.path, query, who)
					}
				}
			}
		}
		// The publisher again, after the others filled the cache: the
		// section is there, and the page is otherwise the same.
		if p := carol.get("/providers/acme/widget"); !strings.Contains(p.body, "user:bob") {
			t.Errorf("%s: the publisher's page after the cache was filled lacks the consumers", when)
		}
	}
	check("before a flush") // the records pending in the server's counter
	if err := e.srv.Downloads.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("after a flush") // the index's

	// The cached page an anonymous visitor gets (compressed, whole, with
	// its ETag) is the same before and after the publisher's visits.
	first := anon.get("/modules/acme/network/aws")
	carol.get("/modules/acme/network/aws")
	second := anon.get("/modules/acme/network/aws")
	if first.header.Get("ETag") == "" || first.header.Get("ETag") != second.header.Get("ETag") || first.body != second.body {
		t.Errorf("the anonymous page changed across a publisher's visit: %q, then %q", first.header.Get("ETag"), second.header.Get("ETag"))
	}

	// A publisher loses the section with the right, on the next page.
	if err := e.admin.RemoveMember(context.Background(), "acme", "carol"); err != nil {
		t.Fatal(err)
	}
	p := carol.get("/providers/acme/widget")
	for _, trace := range consumerTraces {
		if strings.Contains(p.body, trace) {
			t.Errorf("carol, no longer a publisher of acme, still sees %q", trace)
		}
	}
}

// TestConsumersSectionHostileQuery holds the section's form to the API's
// rules: bad days and versions are shown in the page as an error (the
// values escaped), never as a failed page; good ones select.
func TestConsumersSectionHostileQuery(t *testing.T) {
	e := consumersEnv(t, registry.DayOf(time.Now()))
	carol := e.browser(t)
	carol.signIn("carol", password)
	long := strings.Repeat("1", 5000)
	for _, c := range []struct {
		name   string
		query  url.Values
		want   []string // in the page
		absent []string
	}{
		{"days 0", url.Values{"days": {"0"}}, []string{"days must be between 1 and 366, got 0"}, nil},
		{"days negative", url.Values{"days": {"-1"}}, []string{"days must be between 1 and 366, got -1"}, nil},
		{"days beyond the bound", url.Values{"days": {"367"}}, []string{"days must be between 1 and 366, got 367"}, nil},
		{"days huge", url.Values{"days": {"99999999999999999999"}}, []string{"is not a number of days"}, nil},
		{"days with a unit", url.Values{"days": {"30d"}}, []string{"days &#34;30d&#34; is not a number of days"}, nil},
		{"days html", url.Values{"days": {`"><script>alert(3)</script>`}}, []string{"is not a number of days", `value="&#34;&gt;&lt;script&gt;alert(3)&lt;/script&gt;"`}, []string{"<script>alert(3)"}},
		{"versions garbage", url.Values{"versions": {"not a constraint"}}, []string{"is not a version constraint"}, nil},
		{"versions html", url.Values{"versions": {`<script>alert(4)</script>`}}, []string{"is not a version constraint", "&lt;script&gt;alert(4)&lt;/script&gt;"}, []string{"<script>alert(4)"}},
		{"versions too long", url.Values{"versions": {long}}, []string{"query parameter versions is too long"}, nil},
		{"versions with a newline", url.Values{"versions": {">= 1.0\n<script>"}}, []string{"version constraint"}, []string{"\n<script>"}},
		{"days and versions together", url.Values{"days": {"0"}, "versions": {"nope"}}, []string{`role="alert"`}, nil},
		{"days twice", url.Values{"days": {"1", "400"}}, []string{"query parameter &#34;days&#34; is given 2 times: give it once"}, nil},
		{"versions twice", url.Values{"versions": {"< 2.0", "garbage"}}, []string{"query parameter &#34;versions&#34; is given 2 times: give it once"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := carol.get("/providers/acme/widget?" + c.query.Encode())
			if p.status != http.StatusOK {
				t.Fatalf("%d, want the page with an error in its consumers section", p.status)
			}
			if !strings.Contains(p.body, `<p class="notice error" role="alert">`) || strings.Contains(p.body, "<code>user:bob</code>") {
				t.Errorf("no error in the section, or a report beside it")
			}
			for _, want := range c.want {
				if !strings.Contains(p.body, want) {
					t.Errorf("the page lacks %q", want)
				}
			}
			for _, bad := range c.absent {
				if strings.Contains(p.body, bad) {
					t.Errorf("the page holds %q", bad)
				}
			}
		})
	}
	for _, c := range []struct {
		query       url.Values
		want, never []string
	}{
		{url.Values{"versions": {">= 1.1"}}, []string{"Versions <code>&gt;= 1.1</code>", ": 3 downloads by 2 consumers.", "<code>anonymous</code>"}, []string{"user:bob", "terraform 1.9.5"}},
		{url.Values{"versions": {"= 1.0.0"}, "days": {"1"}}, []string{": 3 downloads by 1 consumer.", "<code>user:bob</code>", `value="1"`, "<code>trove consumers acme/widget --days 1 --versions &#39;= 1.0.0&#39;</code>"}, []string{"anonymous", "opentofu"}},
		{url.Values{"versions": {">= 2.0"}}, []string{"no downloads."}, []string{"<table><thead><tr><th scope=\"col\">Consumer"}},
		{url.Values{"days": {"366"}}, []string{": 6 downloads by 3 consumers."}, nil},
	} {
		p := carol.get("/providers/acme/widget?" + c.query.Encode())
		if p.status != http.StatusOK || strings.Contains(p.body, "notice error") {
			t.Errorf("%s: %d or an error", c.query.Encode(), p.status)
		}
		for _, want := range c.want {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s: the page lacks %q", c.query.Encode(), want)
			}
		}
		for _, never := range c.never {
			if strings.Contains(p.body, never) {
				t.Errorf("%s: the page holds %q", c.query.Encode(), never)
			}
		}
	}
}
