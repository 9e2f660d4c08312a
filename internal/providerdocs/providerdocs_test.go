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
	"trove.dev/trove/internal/trovetest/testarchive"
)

// ent is an archive entry for the tests: a regular file unless Typeflag
// says otherwise.
type ent = testarchive.Entry

func parse(data []byte) (*Docs, error) { return Parse(bytes.NewReader(data), int64(len(data))) }

const widget = "---\npage_title: \"acme_widget Resource - terraform-provider-acme\"\nsubcategory: \"Compute\"\ndescription: |-\n  Manages a widget.\n---\n\n# acme_widget\n\nBody.\n"

// tfplugindocs is a docs tree as tfplugindocs generates it, with an
// image and a README that are no pages.
var tfplugindocs = []ent{
	{Name: "docs/", Typeflag: tar.TypeDir},
	{Name: "docs/index.md", Body: "---\npage_title: \"Provider: Acme\"\n---\n# Acme\n"},
	{Name: "docs/resources/widget.md", Body: widget},
	{Name: "docs/data-sources/widget.md", Body: "# data\n"},
	{Name: "docs/ephemeral-resources/token.md", Body: "# token\n"},
	{Name: "docs/functions/parse_id.md", Body: "# fn\n"},
	{Name: "docs/guides/getting-started.md", Body: "# guide\n"},
	{Name: "docs/images/logo.png", Body: "\x89PNG\x00\xff"},
	{Name: "README.md", Body: "# repo readme\n"},
	{Name: "main.go", Body: "package main\n"},
}

func TestParseLayouts(t *testing.T) {
	legacy := []ent{
		{Name: "website/docs/index.html.markdown", Body: "---\nlayout: \"acme\"\npage_title: \"Provider: Acme\"\nsidebar_current: \"docs-acme-index\"\n---\n# Acme\n"},
		{Name: "website/docs/r/widget.html.markdown", Body: widget},
		{Name: "website/docs/d/widget.html.markdown", Body: "# data\n"},
		{Name: "website/docs/guides/v2-upgrade.html.md", Body: "# upgrade\n"},
	}
	docsDirItself := []ent{
		{Name: "./index.md", Body: "# Acme\n"},
		{Name: "./resources/widget.md", Body: widget},
	}
	for _, c := range []struct {
		name    string
		archive func(testing.TB, ...ent) []byte
		entries []ent
		want    []string
	}{
		{"tfplugindocs tar.gz", testarchive.TarGzOf, tfplugindocs, []string{"overview/index", "resources/widget", "data-sources/widget", "ephemeral-resources/token", "functions/parse_id", "guides/getting-started"}},
		{"tfplugindocs zip", testarchive.ZipOf, tfplugindocs, []string{"overview/index", "resources/widget", "data-sources/widget", "ephemeral-resources/token", "functions/parse_id", "guides/getting-started"}},
		{"legacy tar.gz", testarchive.TarGzOf, legacy, []string{"overview/index", "resources/widget", "data-sources/widget", "guides/v2-upgrade"}},
		{"legacy zip", testarchive.ZipOf, legacy, []string{"overview/index", "resources/widget", "data-sources/widget", "guides/v2-upgrade"}},
		{"docs directory itself", testarchive.TarGzOf, docsDirItself, []string{"overview/index", "resources/widget"}},
		{"docs preferred over website/docs", testarchive.TarGzOf, append([]ent{{Name: "website/docs/r/old.html.markdown", Body: "x"}}, tfplugindocs[1:3]...), []string{"overview/index", "resources/widget"}},
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
	d, err := parse(testarchive.TarGzOf(t,
		ent{Name: "docs/index.md", Body: "# no front matter\n"},
		ent{Name: "docs/guides/getting_started-now.md", Body: "---\n---\nbody"},
		ent{Name: "docs/functions/parse_id.md", Body: "---\r\npage_title: 12\r\nother: [1, 2]\r\n---\r\nbody"},
		ent{Name: "docs/resources/bom.md", Body: "\xef\xbb\xbf---\ndescription: d\n---\nbody"},
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
	index := ent{Name: "docs/index.md", Body: "# Acme\n"}
	big := strings.Repeat("a", 1<<20+1)
	many := []ent{index}
	for i := range 2001 {
		many = append(many, ent{Name: "docs/images/" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".png"})
	}
	truncated := testarchive.TarGzOf(t, tfplugindocs...)
	truncatedZip := testarchive.ZipOf(t, tfplugindocs...)
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
		{"traversal", testarchive.TarGzOf(t, index, ent{Name: "docs/../../etc/passwd.md", Body: "x"}), registry.Invalid, `escapes the archive with ".."`},
		{"traversal zip", testarchive.ZipOf(t, index, ent{Name: "../x.md", Body: "x"}), registry.Invalid, `escapes the archive`},
		{"absolute", testarchive.TarGzOf(t, index, ent{Name: "/docs/resources/x.md", Body: "x"}), registry.Invalid, "absolute path"},
		{"drive letter", testarchive.ZipOf(t, index, ent{Name: "C:/docs/x.md", Body: "x"}), registry.Invalid, "absolute path"},
		{"backslash", testarchive.ZipOf(t, index, ent{Name: `docs\resources\x.md`, Body: "x"}), registry.Invalid, "backslash"},
		{"control character", testarchive.TarGzOf(t, index, ent{Name: "docs/resources/x\x1b.md", Body: "x"}), registry.Invalid, "control character"},
		{"long name", testarchive.TarGzOf(t, index, ent{Name: "docs/guides/" + strings.Repeat("a", 600) + ".md", Body: "x"}), registry.Invalid, "longer than 512 bytes"},
		{"symlink", testarchive.TarGzOf(t, index, ent{Name: "docs/resources/x.md", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), registry.Invalid, "is a link"},
		{"hard link", testarchive.TarGzOf(t, index, ent{Name: "docs/resources/x.md", Typeflag: tar.TypeLink, Linkname: "docs/index.md"}), registry.Invalid, "is a link"},
		{"symlink zip", testarchive.ZipOf(t, index, ent{Name: "docs/resources/x.md", Typeflag: tar.TypeSymlink, Linkname: "../../x"}), registry.Invalid, "symbolic link"},
		{"device", testarchive.TarGzOf(t, index, ent{Name: "docs/dev", Typeflag: tar.TypeChar}), registry.Invalid, "not a regular file or directory"},
		{"fifo zip", testarchive.ZipOf(t, index, ent{Name: "docs/fifo", Typeflag: tar.TypeFifo}), registry.Invalid, "not a regular file or directory"},
		{"bomb tar.gz", testarchive.TarGzOf(t, index, ent{Name: "docs/images/zeros.bin", Body: strings.Repeat("\x00", 16<<20)}), registry.TooLarge, "compression bomb"},
		{"bomb zip", testarchive.ZipOf(t, ent{Name: "docs/index.md", Body: strings.Repeat("\x00", 1<<20)}, ent{Name: "docs/guides/a.md", Body: strings.Repeat("\x00", 1<<20)}), registry.TooLarge, "compression bomb"},
		{"too many entries", testarchive.TarGzOf(t, many...), registry.TooLarge, "more than 2000 entries"},
		{"too many entries zip", testarchive.ZipOf(t, many...), registry.TooLarge, "more than 2000 entries"},
		{"huge page", testarchive.TarGzOf(t, index, ent{Name: "docs/guides/big.md", Body: big}), registry.TooLarge, `"docs/guides/big.md" is larger than the limit of 1 MiB`},
		{"huge page zip", testarchive.ZipOf(t, index, ent{Name: "docs/guides/big.md", Body: big}), registry.TooLarge, "larger than the limit of 1 MiB"},
		{"upper-case slug", testarchive.TarGzOf(t, index, ent{Name: "docs/resources/Widget.md", Body: "x"}), registry.Invalid, `"docs/resources/Widget.md": its name "Widget" may hold only`},
		{"dotted slug", testarchive.ZipOf(t, index, ent{Name: "docs/guides/v1.2.md", Body: "x"}), registry.Invalid, `its name "v1.2" may hold only`},
		{"same slug twice", testarchive.TarGzOf(t, index, ent{Name: "docs/resources/w.md", Body: "x"}, ent{Name: "docs/resources/w.markdown", Body: "y"}), registry.Invalid, `two resources pages named "w"`},
		{"r and resources", testarchive.TarGzOf(t, index, ent{Name: "docs/r/w.html.markdown", Body: "x"}, ent{Name: "docs/resources/w.md", Body: "y"}), registry.Invalid, `two resources pages named "w"`},
		{"same entry twice", testarchive.TarGzOf(t, index, index), registry.Invalid, `holds "docs/index.md" twice`},
		{"same entry twice zip", testarchive.ZipOf(t, index, index), registry.Invalid, `holds "docs/index.md" twice`},
		{"invalid UTF-8", testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "caf\xe9"}), registry.Invalid, "is not valid UTF-8"},
		{"unclosed front matter", testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "---\npage_title: x\n"}), registry.Invalid, "never closes it"},
		{"front matter not YAML", testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "---\npage_title: [x\n---\n"}), registry.Invalid, "not valid YAML"},
		{"front matter field not a string", testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "---\npage_title: {a: b}\n---\n"}), registry.Invalid, "page_title must be a string"},
		{"front matter control character", testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "---\npage_title: \"a\\x1bb\"\n---\n"}), registry.Invalid, "control character"},
		{"no pages", testarchive.TarGzOf(t, ent{Name: "README.md", Body: "x"}, ent{Name: "docs/images/a.png", Body: "x"}), registry.Invalid, "holds no documentation pages"},
		{"empty tar.gz", testarchive.TarGzOf(t), registry.Invalid, "holds no documentation pages"},
		{"empty zip", testarchive.ZipOf(t), registry.Invalid, "holds no documentation pages"},
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
	data := testarchive.TarGzOf(t, ent{Name: "docs/index.md", Body: "x"})
	_, err := Parse(bytes.NewReader(data), DefaultLimits.MaxArchiveBytes+1)
	if !registry.IsKind(err, registry.TooLarge) {
		t.Fatalf("Parse of a 32 MiB + 1 archive = %v, want TooLarge", err)
	}
}

// TestParseForgedZipSize checks that a zip entry whose header declares a
// small size but unpacks to more is measured by what comes out.
func TestParseForgedZipSize(t *testing.T) {
	body := strings.Repeat("a", 2<<20)
	_, err := parse(testarchive.ZipOf(t, ent{Body: body, Raw: &zip.FileHeader{Name: "docs/index.md", Method: zip.Store, CRC32: 0,
		CompressedSize64: uint64(len(body)), UncompressedSize64: 10}}))
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
	f.Add(testarchive.TarGzOf(f, tfplugindocs...))
	f.Add(testarchive.ZipOf(f, tfplugindocs...))
	f.Add(testarchive.TarGzOf(f, ent{Name: "docs/index.md", Body: "---\npage_title: &a x\nsubcategory: *a\n---\n"}))
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
