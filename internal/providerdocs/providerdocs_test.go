package providerdocs

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// ent is an archive entry for the tests: a regular file unless typ says
// otherwise.
type ent struct {
	name string
	body string
	typ  byte // tar type flag; 0 means a regular file
	link string
}

func tarGzOf(t testing.TB, entries ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg, Linkname: e.link, Format: tar.FormatPAX}
		if e.typ != 0 {
			hdr.Typeflag = e.typ
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("writing tar header %q: %v", e.name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t testing.TB, entries ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeSymlink:
			h.SetMode(os.ModeSymlink | 0o777)
		case tar.TypeDir:
			h.SetMode(os.ModeDir | 0o755)
		case tar.TypeFifo:
			h.SetMode(os.ModeNamedPipe | 0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		body := e.body
		if e.typ == tar.TypeSymlink {
			body = e.link
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parse(data []byte) (*Docs, error) { return Parse(bytes.NewReader(data), int64(len(data))) }

const widget = "---\npage_title: \"acme_widget Resource - terraform-provider-acme\"\nsubcategory: \"Compute\"\ndescription: |-\n  Manages a widget.\n---\n\n# acme_widget\n\nBody.\n"

// tfplugindocs is a docs tree as tfplugindocs generates it, with an
// image and a README that are no pages.
var tfplugindocs = []ent{
	{name: "docs/", typ: tar.TypeDir},
	{name: "docs/index.md", body: "---\npage_title: \"Provider: Acme\"\n---\n# Acme\n"},
	{name: "docs/resources/widget.md", body: widget},
	{name: "docs/data-sources/widget.md", body: "# data\n"},
	{name: "docs/ephemeral-resources/token.md", body: "# token\n"},
	{name: "docs/functions/parse_id.md", body: "# fn\n"},
	{name: "docs/guides/getting-started.md", body: "# guide\n"},
	{name: "docs/images/logo.png", body: "\x89PNG\x00\xff"},
	{name: "README.md", body: "# repo readme\n"},
	{name: "main.go", body: "package main\n"},
}

func TestParseLayouts(t *testing.T) {
	legacy := []ent{
		{name: "website/docs/index.html.markdown", body: "---\nlayout: \"acme\"\npage_title: \"Provider: Acme\"\nsidebar_current: \"docs-acme-index\"\n---\n# Acme\n"},
		{name: "website/docs/r/widget.html.markdown", body: widget},
		{name: "website/docs/d/widget.html.markdown", body: "# data\n"},
		{name: "website/docs/guides/v2-upgrade.html.md", body: "# upgrade\n"},
	}
	docsDirItself := []ent{
		{name: "./index.md", body: "# Acme\n"},
		{name: "./resources/widget.md", body: widget},
	}
	for _, c := range []struct {
		name    string
		archive func(testing.TB, ...ent) []byte
		entries []ent
		want    []string
	}{
		{"tfplugindocs tar.gz", tarGzOf, tfplugindocs, []string{"overview/index", "resources/widget", "data-sources/widget", "ephemeral-resources/token", "functions/parse_id", "guides/getting-started"}},
		{"tfplugindocs zip", zipOf, tfplugindocs, []string{"overview/index", "resources/widget", "data-sources/widget", "ephemeral-resources/token", "functions/parse_id", "guides/getting-started"}},
		{"legacy tar.gz", tarGzOf, legacy, []string{"overview/index", "resources/widget", "data-sources/widget", "guides/v2-upgrade"}},
		{"legacy zip", zipOf, legacy, []string{"overview/index", "resources/widget", "data-sources/widget", "guides/v2-upgrade"}},
		{"docs directory itself", tarGzOf, docsDirItself, []string{"overview/index", "resources/widget"}},
		{"docs preferred over website/docs", tarGzOf, append([]ent{{name: "website/docs/r/old.html.markdown", body: "x"}}, tfplugindocs[1:3]...), []string{"overview/index", "resources/widget"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := parse(c.archive(t, c.entries...))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range d.Pages {
				got = append(got, p.String())
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("pages = %v, want %v", got, c.want)
			}
			p, ok := d.Page(CategoryResources, "widget")
			if !ok {
				t.Fatal("no resources/widget page")
			}
			want := Page{Category: "resources", Slug: "widget", Title: "acme_widget Resource - terraform-provider-acme",
				Subcategory: "Compute", Description: "Manages a widget.", Markdown: []byte("\n# acme_widget\n\nBody.\n")}
			if p.Title != want.Title || p.Subcategory != want.Subcategory || p.Description != want.Description || !bytes.Equal(p.Markdown, want.Markdown) {
				t.Errorf("widget page = %+v\nwant %+v", p, want)
			}
		})
	}
}

func TestParseTitles(t *testing.T) {
	d, err := parse(tarGzOf(t,
		ent{name: "docs/index.md", body: "# no front matter\n"},
		ent{name: "docs/guides/getting_started-now.md", body: "---\n---\nbody"},
		ent{name: "docs/functions/parse_id.md", body: "---\r\npage_title: 12\r\nother: [1, 2]\r\n---\r\nbody"},
		ent{name: "docs/resources/bom.md", body: "\xef\xbb\xbf---\ndescription: d\n---\nbody"},
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ category, slug, title, body string }{
		{"overview", "index", "Overview", "# no front matter\n"},
		{"guides", "getting_started-now", "Getting started now", "body"},
		{"functions", "parse_id", "12", "body"},
		{"resources", "bom", "bom", "body"},
	} {
		p, ok := d.Page(c.category, c.slug)
		if !ok || p.Title != c.title || string(p.Markdown) != c.body {
			t.Errorf("page %s/%s = %+v (found %v), want title %q and body %q", c.category, c.slug, p, ok, c.title, c.body)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	index := ent{name: "docs/index.md", body: "# Acme\n"}
	big := strings.Repeat("a", 1<<20+1)
	many := []ent{index}
	for i := range 2001 {
		many = append(many, ent{name: "docs/images/" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".png"})
	}
	truncated := tarGzOf(t, tfplugindocs...)
	truncatedZip := zipOf(t, tfplugindocs...)
	random := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	for _, c := range []struct {
		name string
		data []byte
		kind registry.Kind
		msg  string
	}{
		{"traversal", tarGzOf(t, index, ent{name: "docs/../../etc/passwd.md", body: "x"}), registry.Invalid, `escapes the archive with ".."`},
		{"traversal zip", zipOf(t, index, ent{name: "../x.md", body: "x"}), registry.Invalid, `escapes the archive`},
		{"absolute", tarGzOf(t, index, ent{name: "/docs/resources/x.md", body: "x"}), registry.Invalid, "absolute path"},
		{"drive letter", zipOf(t, index, ent{name: "C:/docs/x.md", body: "x"}), registry.Invalid, "absolute path"},
		{"backslash", zipOf(t, index, ent{name: `docs\resources\x.md`, body: "x"}), registry.Invalid, "backslash"},
		{"control character", tarGzOf(t, index, ent{name: "docs/resources/x\x1b.md", body: "x"}), registry.Invalid, "control character"},
		{"long name", tarGzOf(t, index, ent{name: "docs/guides/" + strings.Repeat("a", 600) + ".md", body: "x"}), registry.Invalid, "longer than 512 bytes"},
		{"symlink", tarGzOf(t, index, ent{name: "docs/resources/x.md", typ: tar.TypeSymlink, link: "/etc/passwd"}), registry.Invalid, "is a link"},
		{"hard link", tarGzOf(t, index, ent{name: "docs/resources/x.md", typ: tar.TypeLink, link: "docs/index.md"}), registry.Invalid, "is a link"},
		{"symlink zip", zipOf(t, index, ent{name: "docs/resources/x.md", typ: tar.TypeSymlink, link: "../../x"}), registry.Invalid, "symbolic link"},
		{"device", tarGzOf(t, index, ent{name: "docs/dev", typ: tar.TypeChar}), registry.Invalid, "not a regular file or directory"},
		{"fifo zip", zipOf(t, index, ent{name: "docs/fifo", typ: tar.TypeFifo}), registry.Invalid, "not a regular file or directory"},
		{"bomb tar.gz", tarGzOf(t, index, ent{name: "docs/images/zeros.bin", body: strings.Repeat("\x00", 16<<20)}), registry.TooLarge, "compression bomb"},
		{"bomb zip", zipOf(t, ent{name: "docs/index.md", body: strings.Repeat("\x00", 1<<20)}, ent{name: "docs/guides/a.md", body: strings.Repeat("\x00", 1<<20)}), registry.TooLarge, "compression bomb"},
		{"too many entries", tarGzOf(t, many...), registry.TooLarge, "more than 2000 entries"},
		{"too many entries zip", zipOf(t, many...), registry.TooLarge, "more than 2000 entries"},
		{"huge page", tarGzOf(t, index, ent{name: "docs/guides/big.md", body: big}), registry.TooLarge, `"docs/guides/big.md" is larger than the limit of 1 MiB`},
		{"huge page zip", zipOf(t, index, ent{name: "docs/guides/big.md", body: big}), registry.TooLarge, "larger than the limit of 1 MiB"},
		{"upper-case slug", tarGzOf(t, index, ent{name: "docs/resources/Widget.md", body: "x"}), registry.Invalid, `"docs/resources/Widget.md": its name "Widget" may hold only`},
		{"dotted slug", zipOf(t, index, ent{name: "docs/guides/v1.2.md", body: "x"}), registry.Invalid, `its name "v1.2" may hold only`},
		{"same slug twice", tarGzOf(t, index, ent{name: "docs/resources/w.md", body: "x"}, ent{name: "docs/resources/w.markdown", body: "y"}), registry.Invalid, `two resources pages named "w"`},
		{"r and resources", tarGzOf(t, index, ent{name: "docs/r/w.html.markdown", body: "x"}, ent{name: "docs/resources/w.md", body: "y"}), registry.Invalid, `two resources pages named "w"`},
		{"same entry twice", tarGzOf(t, index, index), registry.Invalid, `holds "docs/index.md" twice`},
		{"same entry twice zip", zipOf(t, index, index), registry.Invalid, `holds "docs/index.md" twice`},
		{"invalid UTF-8", tarGzOf(t, ent{name: "docs/index.md", body: "caf\xe9"}), registry.Invalid, "is not valid UTF-8"},
		{"unclosed front matter", tarGzOf(t, ent{name: "docs/index.md", body: "---\npage_title: x\n"}), registry.Invalid, "never closes it"},
		{"front matter not YAML", tarGzOf(t, ent{name: "docs/index.md", body: "---\npage_title: [x\n---\n"}), registry.Invalid, "not valid YAML"},
		{"front matter field not a string", tarGzOf(t, ent{name: "docs/index.md", body: "---\npage_title: {a: b}\n---\n"}), registry.Invalid, "page_title must be a string"},
		{"front matter control character", tarGzOf(t, ent{name: "docs/index.md", body: "---\npage_title: \"a\\x1bb\"\n---\n"}), registry.Invalid, "control character"},
		{"no pages", tarGzOf(t, ent{name: "README.md", body: "x"}, ent{name: "docs/images/a.png", body: "x"}), registry.Invalid, "holds no documentation pages"},
		{"empty tar.gz", tarGzOf(t), registry.Invalid, "holds no documentation pages"},
		{"empty zip", zipOf(t), registry.Invalid, "holds no documentation pages"},
		{"truncated tar.gz", truncated[:len(truncated)/2], registry.Invalid, "not a valid .tar.gz file"},
		{"truncated zip", truncatedZip[:len(truncatedZip)-30], registry.Invalid, "not a valid zip file"},
		{"random bytes", random, registry.Invalid, "neither a .tar.gz nor a .zip"},
		{"gzip magic then random", append([]byte{0x1f, 0x8b}, random...), registry.Invalid, "not a valid .tar.gz"},
		{"empty", nil, registry.Invalid, "neither a .tar.gz nor a .zip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := parse(c.data)
			if !registry.IsKind(err, c.kind) || !strings.Contains(registry.Message(err), c.msg) {
				t.Fatalf("Parse = %v, %v (kind %v), want a %v error containing %q", d, err, registry.KindOf(err), c.kind, c.msg)
			}
		})
	}
}

func TestParseRefusesLargeArchive(t *testing.T) {
	data := tarGzOf(t, ent{name: "docs/index.md", body: "x"})
	_, err := Parse(bytes.NewReader(data), DefaultLimits.MaxArchiveBytes+1)
	if !registry.IsKind(err, registry.TooLarge) {
		t.Fatalf("Parse of a 32 MiB + 1 archive = %v, want TooLarge", err)
	}
}

// TestParseForgedZipSize checks that a zip entry whose header declares a
// small size but unpacks to more is measured by what comes out.
func TestParseForgedZipSize(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	body := strings.Repeat("a", 2<<20)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "docs/index.md", Method: zip.Store, CRC32: 0,
		CompressedSize64: uint64(len(body)), UncompressedSize64: 10})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(body))
	zw.Close()
	_, err = parse(buf.Bytes())
	if err == nil || registry.KindOf(err) == registry.Internal {
		t.Fatalf("Parse of a zip entry lying about its size = %v, want a refusal", err)
	}
}

func TestPack(t *testing.T) {
	repo := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/index.md", "# Acme\n")
	write("docs/resources/widget.md", widget)
	write("docs/guides/start.md", "# start\n")
	write("docs/images/logo.png", "png")
	write("main.go", "package main\n")
	var a, b bytes.Buffer
	if err := Pack(repo, &a); err != nil {
		t.Fatal(err)
	}
	// The same tree with other times packs to the same bytes, from the
	// repository or from its docs directory.
	if err := os.Chtimes(filepath.Join(repo, "docs", "index.md"), t0, t0); err != nil {
		t.Fatal(err)
	}
	if err := Pack(filepath.Join(repo, "docs"), &b); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(a.Bytes()) != sha256.Sum256(b.Bytes()) {
		t.Error("Pack is not deterministic")
	}
	d, err := parse(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Pages) != 3 || d.Pages[0].Category != CategoryOverview {
		t.Errorf("pages of the packed tree = %v", d.Pages)
	}
	names := tarNames(t, a.Bytes())
	if strings.Join(names, " ") != "docs/guides/start.md docs/index.md docs/resources/widget.md" {
		t.Errorf("packed names = %v", names)
	}

	legacy := t.TempDir()
	if err := os.MkdirAll(filepath.Join(legacy, "website", "docs", "r"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(legacy, "website", "docs", "r", "widget.html.markdown"), []byte(widget), 0o644)
	var c bytes.Buffer
	if err := Pack(legacy, &c); err != nil {
		t.Fatal(err)
	}
	if d, err := parse(c.Bytes()); err != nil || len(d.Pages) != 1 || d.Pages[0].Slug != "widget" {
		t.Errorf("legacy tree: %v, %v", d, err)
	}

	if err := Pack(t.TempDir(), &c); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Pack of an empty directory = %v, want Invalid", err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(repo, "docs", "guides", "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := Pack(repo, &c); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Pack with a symbolic link = %v, want Invalid", err)
	}
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		if !hdr.ModTime.Equal(t0.Truncate(0)) && hdr.ModTime.Unix() != 0 {
			t.Errorf("%s has time %v, want the epoch", hdr.Name, hdr.ModTime)
		}
		names = append(names, hdr.Name)
	}
	return names
}

func FuzzParse(f *testing.F) {
	f.Add(tarGzOf(f, tfplugindocs...))
	f.Add(zipOf(f, tfplugindocs...))
	f.Add(tarGzOf(f, ent{name: "docs/index.md", body: "---\npage_title: &a x\nsubcategory: *a\n---\n"}))
	f.Add([]byte("PK\x05\x06"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parse(data)
		if err != nil {
			if registry.KindOf(err) == registry.Internal {
				t.Fatalf("Parse answered an internal error: %v", err)
			}
			return
		}
		if len(d.Pages) == 0 {
			t.Fatal("Parse succeeded without pages")
		}
		var total int
		for _, p := range d.Pages {
			if checkSlug("", p.Slug) != nil && p.Category != CategoryOverview {
				t.Errorf("page with slug %q", p.Slug)
			}
			total += len(p.Markdown)
		}
		if int64(total) > DefaultLimits.MaxTotalBytes {
			t.Errorf("pages total %d bytes", total)
		}
	})
}

var t0 = time.Date(2025, time.March, 14, 15, 9, 26, 0, time.UTC)
