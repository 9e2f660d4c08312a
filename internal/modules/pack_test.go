package modules

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// writeTree creates files (slash paths -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func pack(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := PackArchive(&buf, dir); err != nil {
		t.Fatalf("PackArchive: %v", err)
	}
	return buf.Bytes()
}

// listTar returns "name mode size" for each entry of a .tar.gz, and the
// gzip header.
func listTar(t *testing.T, data []byte) ([]string, gzip.Header) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(PackTime) || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("entry %s: mtime %s uid %d gid %d uname %q gname %q, want normalized", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		out = append(out, hdr.Name+" "+strings.TrimPrefix(os.FileMode(hdr.Mode).String(), "-")+" "+strconv.FormatInt(hdr.Size, 10))
	}
	return out, zr.Header
}

var sampleTree = map[string]string{
	"main.tf":                         mainTF,
	"outputs.tf":                      "output \"id\" {\n  value = 1\n}\n",
	"README.md":                       "# Network\n",
	"modules/subnet/main.tf":          mainTF,
	"a-b.tf":                          "# a file next to the directory a\n",
	"a/x.txt":                         "x",
	".git/HEAD":                       "ref: refs/heads/main\n",
	".git/objects/ab/cdef":            "blob",
	"sub/.git":                        "gitdir: ../.git/modules/sub\n",
	".terraform/modules/x/main.tf":    "cached",
	"examples/basic/.terraform/x":     "cached",
	"terraform.tfstate":               "{}",
	"terraform.tfstate.backup":        "{}",
	"examples/basic/x.tfstate":        "{}",
	".terraform.lock.hcl":             "# lock",
	".terraform.tfstate.lock.info":    "{}",
	"examples/basic/main.tf":          "module \"n\" {\n  source = \"../..\"\n}\n",
	"examples/basic/terraform.tfvars": "cidr = \"10.0.0.0/16\"\n",
}

func TestPackDeterministic(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	first := pack(t, dir)
	if second := pack(t, dir); !bytes.Equal(first, second) {
		t.Fatal("packing the same tree twice gave different bytes")
	}

	// The same tree elsewhere, written in another order, with other
	// modification times and permissions, packs to the same bytes.
	other := t.TempDir()
	names := make([]string, 0, len(sampleTree))
	for n := range sampleTree {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Reverse(names)
	for i, n := range names {
		writeTree(t, other, map[string]string{n: sampleTree[n]})
		p := filepath.Join(other, filepath.FromSlash(n))
		old := time.Date(2011, 1, 1, 0, 0, i, 0, time.UTC)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := pack(t, other); !bytes.Equal(first, got) {
		t.Error("the same tree with other mtimes, permissions and creation order packed to different bytes")
	}

	// A change of content changes the bytes.
	writeTree(t, other, map[string]string{"outputs.tf": "output \"id\" {\n  value = 2\n}\n"})
	if got := pack(t, other); bytes.Equal(first, got) {
		t.Error("a changed file packed to the same bytes")
	}
}

func TestPackContents(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	writeTree(t, dir, map[string]string{"scripts/run.sh": "#!/bin/sh\n"})
	if err := os.Chmod(filepath.Join(dir, "scripts/run.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	stats, err := PackArchive(&buf, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, gz := listTar(t, buf.Bytes())
	want := []string{
		"README.md rw-r--r-- 10",
		"a/ rwxr-xr-x 0", // entries sort by name without the directories' trailing "/"
		"a-b.tf rw-r--r-- 33",
		"a/x.txt rw-r--r-- 1",
		"examples/ rwxr-xr-x 0",
		"examples/basic/ rwxr-xr-x 0",
		"examples/basic/main.tf rw-r--r-- 34",
		"examples/basic/terraform.tfvars rw-r--r-- 21",
		"main.tf rw-r--r-- 36",
		"modules/ rwxr-xr-x 0",
		"modules/subnet/ rwxr-xr-x 0",
		"modules/subnet/main.tf rw-r--r-- 36",
		"outputs.tf rw-r--r-- 28",
		"scripts/ rwxr-xr-x 0",
		"scripts/run.sh rwxr-xr-x 10",
		"sub/ rwxr-xr-x 0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("packed entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if stats.Files != 9 {
		t.Errorf("PackStats.Files = %d, want 9", stats.Files)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() || gz.Comment != "" {
		t.Errorf("gzip header has name %q, time %s, comment %q; want none", gz.Name, gz.ModTime, gz.Comment)
	}
	// What PackArchive writes, CheckArchive accepts.
	if _, _, err := check(t, buf.Bytes(), Limits{}); err != nil {
		t.Errorf("CheckArchive of a packed module: %v", err)
	}
}

func TestPackLinks(t *testing.T) {
	t.Run("inside the tree are followed", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": mainTF, "shared/versions.tf": "terraform {}\n"})
		must(t, os.Symlink("shared/versions.tf", filepath.Join(dir, "versions.tf")))
		must(t, os.MkdirAll(filepath.Join(dir, "modules"), 0o755))
		must(t, os.Symlink("../shared", filepath.Join(dir, "modules", "common")))
		var buf bytes.Buffer
		if _, err := PackArchive(&buf, dir); err != nil {
			t.Fatal(err)
		}
		got, _ := listTar(t, buf.Bytes())
		for _, want := range []string{"versions.tf rw-r--r-- 13", "modules/common/ rwxr-xr-x 0", "modules/common/versions.tf rw-r--r-- 13"} {
			if !slices.Contains(got, want) {
				t.Errorf("packed entries %q lack %q", got, want)
			}
		}
	})
	tests := map[string]func(t *testing.T, dir string){
		"to a file outside": func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "secret.tf")
			must(t, os.WriteFile(outside, []byte("x"), 0o644))
			must(t, os.Symlink(outside, filepath.Join(dir, "secret.tf")))
		},
		"relative out of the tree": func(t *testing.T, dir string) {
			must(t, os.Symlink("../../etc", filepath.Join(dir, "etc")))
		},
		"loop": func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
			must(t, os.Symlink("..", filepath.Join(dir, "a", "up")))
		},
		"dangling": func(t *testing.T, dir string) {
			must(t, os.Symlink("nope.tf", filepath.Join(dir, "gone.tf")))
		},
	}
	for name, setup := range tests {
		t.Run(name+" are refused", func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"main.tf": mainTF})
			setup(t, dir)
			_, err := PackArchive(io.Discard, dir)
			if !registry.IsKind(err, registry.Invalid) {
				t.Fatalf("PackArchive error = %v, want Invalid", err)
			}
		})
	}
}

func TestPackRefusesWithoutRootConfig(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"modules/x/main.tf": mainTF, "README.md": "hi"})
	if _, err := PackArchive(io.Discard, dir); !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "no Terraform configuration file") {
		t.Errorf("PackArchive error = %v, want an Invalid error about the missing configuration", err)
	}
}

func TestPackArchiveFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	writeTree(t, dir, map[string]string{"untracked.tf": "# not listed\n"})
	var buf bytes.Buffer
	_, err := PackArchiveFiles(&buf, dir, []string{"main.tf", "modules/subnet/main.tf", ".terraform.lock.hcl", "terraform.tfstate"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := listTar(t, buf.Bytes())
	want := []string{"main.tf rw-r--r-- 36", "modules/ rwxr-xr-x 0", "modules/subnet/ rwxr-xr-x 0", "modules/subnet/main.tf rw-r--r-- 36"}
	if !slices.Equal(got, want) {
		t.Errorf("PackArchiveFiles entries = %q, want %q", got, want)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../main.tf", "./main.tf"} {
		if _, err := PackArchiveFiles(io.Discard, dir, []string{"main.tf", bad}); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("PackArchiveFiles with %q: error = %v, want Invalid", bad, err)
		}
	}
}

func TestExcluded(t *testing.T) {
	tests := map[string]bool{
		".git": true, ".git/config": true, "a/.git": true, ".terraform/x": true, "x/.terraform": true,
		"terraform.tfstate": true, "terraform.tfstate.backup": true, "x/prod.tfstate": true,
		".terraform.lock.hcl": true, "examples/a/.terraform.lock.hcl": true, ".terraform.tfstate.lock.info": true,
		"main.tf": false, ".gitignore": false, "terraform.tfvars": false, "git/x": false, "tfstate.md": false,
		"docs/.github/x": false,
	}
	for in, want := range tests {
		if got := Excluded(in); got != want {
			t.Errorf("Excluded(%q) = %v, want %v", in, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
