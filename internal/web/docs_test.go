package web_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// publishProvider publishes acme/widget (or ns/typ) version with docs in
// the signed release when docs is not nil.
func (e *env) publishProvider(t *testing.T, ns, typ, version string, docs []byte) {
	t.Helper()
	ctx := context.Background()
	key := signingtest.NewKey(t, ns)
	if _, err := e.admin.AddSigningKey(ctx, ns, apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil && !client.IsConflict(err) {
		t.Fatal(err)
	}
	rel := releasetest.Build(t, key, releasetest.Spec{Type: typ, Version: version, Platforms: []string{"linux_amd64", "darwin_arm64"},
		Protocols: []string{"5.0"}, Docs: docs})
	var files []client.PublishFile
	for _, f := range rel.Files {
		data := f.Data
		files = append(files, client.PublishFile{Name: f.Name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }})
	}
	if _, err := e.admin.PublishProvider(ctx, ns, typ, version, files); err != nil {
		t.Fatal(err)
	}
}

var widgetDocs = map[string]string{
	"docs/index.md": "---\npage_title: \"Provider: Widget\"\n---\n# Widget Provider\n\nManages widgets. See [the widget resource](resources/widget.md) and [a guide](guides/start.md#step-2).\n",
	"docs/resources/widget.md": "---\npage_title: \"widget_widget Resource - widget\"\nsubcategory: \"Core\"\ndescription: |-\n  Manages a widget.\n---\n# widget_widget (Resource)\n\n" +
		"## Example Usage\n\n```terraform\nresource \"widget_widget\" \"x\" {\n  name = \"a\"\n}\n```\n\n## Schema\n\n### Required\n\n- `name` (String) The name.\n\nSee also [the data source](../data-sources/widget.md), [the overview](../index.md) and [elsewhere](https://example.com/x).\n",
	"docs/data-sources/widget.md": "# widget_widget (Data Source)\n\nReads a widget. <script>alert(1)</script> [bad](javascript:alert(2)) <img src=x onerror=alert(3)>\n",
	"docs/guides/start.md":        "---\npage_title: \"Getting started\"\n---\n# Getting started\n\n## Step 1\n\n## Step 2\n",
	"docs/images/diagram.png":     "not markdown: ignored",
}

func TestProviderPageAndDocs(t *testing.T) {
	e := start(t)
	e.publishProvider(t, "acme", "widget", "1.0.0", nil)
	e.publishProvider(t, "acme", "widget", "1.1.0", testarchive.TarGz(t, widgetDocs))
	b := e.browser(t)

	p := b.get("/providers/acme/widget")
	if p.status != 200 {
		t.Fatalf("provider page: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{"<h1>acme/widget", `source  = &#34;trove.localhost/acme/widget&#34;`, `version = &#34;~&gt; 1.1&#34;`,
		"darwin", "linux", "terraform-provider-widget_1.1.0_linux_amd64.zip", "5.0",
		"Widget Provider", // the overview
		`href="/providers/acme/widget/1.1.0/docs/resources/widget"`, `href="/providers/acme/widget/1.1.0/docs/data-sources/widget"`,
		`href="/providers/acme/widget/1.1.0/docs/guides/start#h-step-2"`, "Getting started", "Data sources", "Guides"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("provider page lacks %q", want)
		}
	}
	keyID := regexp.MustCompile(`<code>([0-9A-F]{16})</code>`).FindStringSubmatch(p.body)
	if keyID == nil || !strings.Contains(p.body, "fingerprint") {
		t.Error("the provider page names no signing key with its fingerprint")
	}

	doc := b.get("/providers/acme/widget/1.1.0/docs/resources/widget")
	if doc.status != 200 {
		t.Fatalf("doc page: %d", doc.status)
	}
	for _, want := range []string{`<h2 id="h-widget_widget-resource">widget_widget (Resource)</h2>`, "Manages a widget.", "Core",
		`class="language-terraform"`, `href="/providers/acme/widget/1.1.0/docs/data-sources/widget"`, `href="/providers/acme/widget/1.1.0"`,
		`href="https://example.com/x"`, `aria-current="page" title="widget_widget Resource - widget">widget_widget</a>`} {
		if !strings.Contains(doc.body, want) {
			t.Errorf("doc page lacks %q", want)
		}
	}
	ds := strings.ToLower(b.get("/providers/acme/widget/1.1.0/docs/data-sources/widget").body)
	for _, bad := range []string{"<script>alert", "javascript:", "onerror"} {
		if strings.Contains(ds, bad) {
			t.Errorf("the data source page carries %q", bad)
		}
	}
	for _, path := range []string{"/providers/acme/widget/1.1.0/docs/resources/nope", "/providers/acme/widget/1.0.0/docs/resources/widget",
		"/providers/acme/widget/1.1.0/docs/overview/index", "/providers/acme/widget/1.1.0/docs/images/diagram", "/providers/acme/widget/9.9.9/docs/resources/widget"} {
		if p := b.get(path); p.status != http.StatusNotFound {
			t.Errorf("%s answered %d", path, p.status)
		}
	}
	// The version without documentation says nothing of it.
	if p := b.get("/providers/acme/widget/1.0.0"); strings.Contains(p.body, "Widget Provider") || !strings.Contains(p.body, "The latest version is") {
		t.Errorf("the page of 1.0.0:\n%s", p.body)
	}

	// Documentation uploaded later shows at once.
	if _, err := e.admin.UploadProviderDocs(context.Background(), "acme", "widget", "1.0.0", bytes.NewReader(testarchive.TarGz(t, map[string]string{"docs/index.md": "# Old widget docs\n"}))); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/providers/acme/widget/1.0.0"); !strings.Contains(p.body, "Old widget docs") {
		t.Error("documentation uploaded later is not shown")
	}
	search := b.get("/search?q=widget&kind=provider")
	if !strings.Contains(search.body, `href="/providers/acme/widget"`) {
		t.Errorf("search misses the provider:\n%s", search.body)
	}
}

// TestNewDocsUploadSeenAtOnce: documentation uploaded for a version
// that had none shows on the very next request, although the pages and
// the parsed archives are cached: the upload's change reaches every
// cache through the server's change channel.
func TestNewDocsUploadSeenAtOnce(t *testing.T) {
	e := start(t)
	e.publishProvider(t, "acme", "widget", "1.0.0", nil)
	e.publishProvider(t, "acme", "widget", "1.1.0", testarchive.TarGz(t, widgetDocs))
	b := e.browser(t)
	const page = "/providers/acme/widget/1.0.0/docs/resources/widget"
	const guide = `href="/providers/acme/widget/1.0.0/docs/guides/start"`
	for range 2 { // the second from the caches
		if p := b.get(page); p.status != http.StatusNotFound {
			t.Fatalf("the resource page before the upload: %d", p.status)
		}
		if p := b.get("/providers/acme/widget/1.0.0"); strings.Contains(p.body, guide) {
			t.Fatalf("the version page before the upload:\n%s", p.body)
		}
		// Another version's documentation, parsed and kept.
		if p := b.get("/providers/acme/widget/1.1.0/docs/resources/widget"); !strings.Contains(p.body, "Manages a widget.") {
			t.Fatalf("the resource page of 1.1.0:\n%s", p.body)
		}
	}
	upload := map[string]string{
		"docs/index.md":            "# Widget Provider\n\nFirst edition.\n",
		"docs/resources/widget.md": "# widget_widget (Resource)\n\nBuilds widgets, first edition.\n",
		"docs/guides/start.md":     "# Getting started\n",
	}
	if _, err := e.admin.UploadProviderDocs(context.Background(), "acme", "widget", "1.0.0", bytes.NewReader(testarchive.TarGz(t, upload))); err != nil {
		t.Fatal(err)
	}
	if p := b.get(page); p.status != http.StatusOK || !strings.Contains(p.body, "Builds widgets, first edition.") {
		t.Errorf("the resource page after the upload: %d\n%s", p.status, p.body)
	}
	if p := b.get("/providers/acme/widget/1.0.0"); !strings.Contains(p.body, guide) || !strings.Contains(p.body, "First edition.") {
		t.Errorf("the version page after the upload:\n%s", p.body)
	}
	if p := b.get("/providers/acme/widget/1.1.0/docs/resources/widget"); !strings.Contains(p.body, "Manages a widget.") {
		t.Errorf("the other version's page after the upload:\n%s", p.body)
	}
}
