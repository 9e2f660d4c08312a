package modules

import (
	"archive/tar"
	"compress/gzip"
	"errors"
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

// PackTime is the modification time of every entry PackArchive writes, so that
// the archive does not depend on when files were touched. (Not the Unix
// epoch: some tar programs warn about implausibly old time stamps.)
var PackTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// PackStats describes a packed module.
type PackStats struct {
	Files int   // regular files packed
	Bytes int64 // their total size
}

// excludedDirs are directories PackArchive leaves out wherever they are:
// version-control data and Terraform's working directory.
var excludedDirs = []string{".git", ".hg", ".svn", ".terraform"}

// Excluded reports whether PackArchive leaves out the file or directory at the
// slash-separated path rel: anything inside .git, .hg, .svn or .terraform,
// Terraform state (*.tfstate and its backups and lock info, *.tfstate.*),
// and the dependency lock file .terraform.lock.hcl, which Terraform reads
// only in the root module of a configuration and which depends on the
// publisher's machine.
func Excluded(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if slices.Contains(excludedDirs, part) {
			return true
		}
	}
	base := path.Base(rel)
	return base == ".terraform.lock.hcl" || strings.HasSuffix(base, ".tfstate") || strings.Contains(base, ".tfstate.")
}

// PackArchive writes the module in dir to w as a .tar.gz that depends only on the
// names, contents and executable bits of its files: entries sorted by
// name, one fixed modification time (PackTime), owner 0, modes 0644, 0755
// for executables and directories, and a gzip header without name or time.
// The same tree packed by the same Trove version gives the same bytes.
//
// PackArchive leaves out what Excluded names. It follows symbolic links that
// resolve inside dir, packing what they point to, and refuses links that
// leave dir, loops and special files. The root must hold a configuration
// file (*.tf or *.tf.json).
func PackArchive(w io.Writer, dir string) (PackStats, error) {
	p, err := newPacker(dir)
	if err != nil {
		return PackStats{}, err
	}
	if err := p.walk("", p.root, []string{p.root}); err != nil {
		return PackStats{}, err
	}
	return p.write(w)
}

// PackArchiveFiles is PackArchive restricted to files, slash-separated paths relative to
// dir such as `git ls-files` prints, and the directories that hold them.
// Excluded paths are left out here too.
func PackArchiveFiles(w io.Writer, dir string, files []string) (PackStats, error) {
	p, err := newPacker(dir)
	if err != nil {
		return PackStats{}, err
	}
	for _, rel := range files {
		if rel != path.Clean(rel) || rel == "." || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, `\`) {
			return PackStats{}, registry.Errorf(registry.Invalid, "cannot pack %q: want a clean path relative to the module directory", rel)
		}
		if Excluded(rel) {
			continue
		}
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			p.add(packEntry{rel: d, dir: true})
		}
		if err := p.visit(rel, filepath.Join(p.root, filepath.FromSlash(rel)), []string{p.root}); err != nil {
			return PackStats{}, err
		}
	}
	return p.write(w)
}

// packEntry is one entry of the archive to write.
type packEntry struct {
	rel  string // slash-separated path in the archive
	dir  bool
	src  string // the file to read (links resolved)
	exec bool
	size int64
}

type packer struct {
	root    string // dir with every link resolved
	entries map[string]packEntry
}

func newPacker(dir string) (*packer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "cannot pack %s: %v", dir, unwrapPathError(err))
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, registry.Errorf(registry.Invalid, "cannot pack %s: not a directory", dir)
	}
	return &packer{root: root, entries: make(map[string]packEntry)}, nil
}

func (p *packer) add(e packEntry) { p.entries[e.rel] = e }

// walk adds the contents of the directory real, packed as rel ("" for the
// root). stack holds the real paths of the directories being walked, to
// detect loops through links.
func (p *packer) walk(rel, real string, stack []string) error {
	des, err := os.ReadDir(real)
	if err != nil {
		return registry.Errorf(registry.Invalid, "cannot pack %s: %v", displayPath(rel), unwrapPathError(err))
	}
	for _, de := range des {
		child := path.Join(rel, de.Name())
		if Excluded(child) {
			continue
		}
		if err := p.visit(child, filepath.Join(real, de.Name()), stack); err != nil {
			return err
		}
	}
	return nil
}

// visit adds the file, directory or link at src, packed as rel.
func (p *packer) visit(rel, src string, stack []string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return registry.Errorf(registry.Invalid, "cannot pack %s: %v", rel, unwrapPathError(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(src)
		if err != nil {
			return registry.Errorf(registry.Invalid, "cannot pack %s: it is a symbolic link that does not resolve (%v)", rel, unwrapPathError(err))
		}
		if target != p.root && !strings.HasPrefix(target, p.root+string(filepath.Separator)) {
			return registry.Errorf(registry.Invalid, "cannot pack %s: it is a symbolic link to %s, outside the module directory; Trove packs no file from outside the module", rel, target)
		}
		if fi, err = os.Stat(target); err != nil {
			return registry.Errorf(registry.Invalid, "cannot pack %s: %v", rel, unwrapPathError(err))
		}
		src = target
	}
	switch {
	case fi.IsDir():
		if slices.Contains(stack, src) {
			return registry.Errorf(registry.Invalid, "cannot pack %s: it is a symbolic link to a directory that contains it (a loop)", rel)
		}
		p.add(packEntry{rel: rel, dir: true})
		return p.walk(rel, src, append(slices.Clip(stack), src))
	case fi.Mode().IsRegular():
		p.add(packEntry{rel: rel, src: src, exec: fi.Mode().Perm()&0o111 != 0, size: fi.Size()})
		return nil
	default:
		return registry.Errorf(registry.Invalid, "cannot pack %s: not a regular file, directory or symbolic link (%s)", rel, fi.Mode().Type())
	}
}

// write writes the collected entries in name order.
func (p *packer) write(w io.Writer) (PackStats, error) {
	var stats PackStats
	rootConfig := false
	names := make([]string, 0, len(p.entries))
	for name, e := range p.entries {
		names = append(names, name)
		if !e.dir && !strings.Contains(name, "/") && isConfigFile(name) {
			rootConfig = true
		}
	}
	if !rootConfig {
		return stats, registry.Errorf(registry.Invalid, "%s holds no Terraform configuration file (*.tf) at its root: point at the module's own directory", p.root)
	}
	slices.Sort(names)

	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression) // header: no name, no time
	if err != nil {
		return stats, err
	}
	tw := tar.NewWriter(zw)
	for _, name := range names {
		e := p.entries[name]
		hdr := &tar.Header{Name: e.rel, ModTime: PackTime, Mode: 0o644, Typeflag: tar.TypeReg, Size: e.size}
		if e.dir {
			hdr.Name, hdr.Mode, hdr.Typeflag, hdr.Size = e.rel+"/", 0o755, tar.TypeDir, 0
		} else if e.exec {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return stats, err
		}
		if e.dir {
			continue
		}
		if err := copyFile(tw, e); err != nil {
			return stats, err
		}
		stats.Files++
		stats.Bytes += e.size
	}
	if err := tw.Close(); err != nil {
		return stats, err
	}
	return stats, zw.Close()
}

// copyFile writes exactly e.size bytes of e.src.
func copyFile(w io.Writer, e packEntry) error {
	f, err := os.Open(e.src)
	if err != nil {
		return registry.Errorf(registry.Invalid, "cannot pack %s: %v", e.rel, unwrapPathError(err))
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, e.size))
	if err != nil && !errors.Is(err, tar.ErrWriteTooLong) {
		return err
	}
	if n != e.size || err != nil {
		return registry.Errorf(registry.Invalid, "cannot pack %s: it changed while it was being packed", e.rel)
	}
	if more, _ := f.Read(make([]byte, 1)); more != 0 {
		return registry.Errorf(registry.Invalid, "cannot pack %s: it changed while it was being packed", e.rel)
	}
	return nil
}

// unwrapPathError drops the path an *fs.PathError repeats.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func displayPath(rel string) string {
	if rel == "" {
		return "the module directory"
	}
	return rel
}
