package dist

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"time"
)

// writeArchive writes a .tar.gz of the binary (mode 0755), LICENSE and
// README.md at its root, every entry owned by root and stamped mtime.
func writeArchive(path, bin string, license, readme []byte, mtime time.Time) error {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range []tarFile{
		{Name: BinaryName, Mode: 0o755, Data: exe},
		{Name: "LICENSE", Mode: 0o644, Data: license},
		{Name: "README.md", Mode: 0o644, Data: readme},
	} {
		if err := e.write(tw, mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// tarFile is one entry of a tar stream: a regular file, or a directory
// when Dir is set.
type tarFile struct {
	Name     string
	Mode     int64
	Data     []byte
	Dir      bool
	UID, GID int
}

func (e tarFile) write(tw *tar.Writer, mtime time.Time) error {
	h := &tar.Header{
		Name: e.Name, Mode: e.Mode, Uid: e.UID, Gid: e.GID,
		ModTime: mtime, Format: tar.FormatPAX,
	}
	if e.Dir {
		h.Typeflag = tar.TypeDir
		if h.Name[len(h.Name)-1] != '/' {
			h.Name += "/"
		}
	} else {
		h.Typeflag = tar.TypeReg
		h.Size = int64(len(e.Data))
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if e.Dir {
		return nil
	}
	_, err := tw.Write(e.Data)
	return err
}
