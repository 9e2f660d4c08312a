package providerdocs

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// Pack writes a docs archive (tar.gz, deterministic: sorted names, zero
// times, fixed modes) of the docs tree at dir: a provider repository's
// root containing docs/ (tfplugindocs) or website/docs/ (legacy), or the
// docs directory itself. Its Markdown files are written under "docs/",
// keeping their path below the docs directory; other files (images) are
// left out, since Parse ignores them. A symbolic link or other special
// file among the Markdown files is an error: Parse would refuse it.
func Pack(dir string, w io.Writer) error {
	root, err := docsDir(dir)
	if err != nil {
		return err
	}
	var names []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git and the like
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !isMarkdown(rel) {
			return nil
		}
		if !d.Type().IsRegular() {
			return registry.Errorf(registry.Invalid, "%s is not a regular file (a symbolic link?); a documentation archive holds regular files only: copy the file there", p)
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	zw := gzip.NewWriter(w) // no name, zero time
	tw := tar.NewWriter(zw)
	for _, rel := range names {
		if err := packFile(tw, filepath.Join(root, filepath.FromSlash(rel)), path.Join("docs", rel)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// docsDir returns the docs directory of dir: dir/docs, dir/website/docs,
// or dir itself when it holds an index page or a page directory.
func docsDir(dir string) (string, error) {
	for _, sub := range []string{"docs", filepath.Join("website", "docs")} {
		p := filepath.Join(dir, sub)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, nil
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", registry.Errorf(registry.Invalid, "%s is not a directory", dir)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, de := range des {
		if _, ok := dirCategories[de.Name()]; (ok && de.IsDir()) || !de.IsDir() && isMarkdown(de.Name()) && classifyIndex(de.Name()) {
			return dir, nil
		}
	}
	return "", registry.Errorf(registry.Invalid, "%s holds no documentation: expected docs/ (tfplugindocs generate) or website/docs/ in a provider's repository, or index.md, resources/, data-sources/, guides/ in the docs directory itself", dir)
}

// classifyIndex reports whether a file name is the overview page.
func classifyIndex(name string) bool {
	c, _, ok, err := classify(name, name)
	return err == nil && ok && c == CategoryOverview
}

// packFile writes one file into tw with a deterministic header.
func packFile(tw *tar.Writer, src, name string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return registry.Errorf(registry.Invalid, "%s is not a regular file", src)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: fi.Size(), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != fi.Size() {
		return fmt.Errorf("%s changed while it was packed", src)
	}
	return nil
}
