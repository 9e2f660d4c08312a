package api

import (
	"archive/tar"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// paxRecord formats one PAX extended header record ("<len> key=value\n").
func paxRecord(k, v string) string {
	n := len(k) + len(v) + 3
	for {
		s := fmt.Sprintf("%d %s=%s\n", n, k, v)
		if len(s) == n {
			return s
		}
		n = len(s)
	}
}

// TestStageBlobsRefusesSparseEntries: a PAX sparse entry of a couple of
// KB that archive/tar would unpack to 1 GiB is refused before anything is
// staged. (tar.Writer cannot write one: the PAX header is patched in.)
func TestStageBlobsRefusesSparseEntries(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	recs := paxRecord("GNU.sparse.size", "1073741824") + paxRecord("GNU.sparse.numblocks", "1") + paxRecord("GNU.sparse.map", "0,0")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "PaxHeaders/x", Size: int64(len(recs)), Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Write([]byte(recs))
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: apispec.BundleBlobPrefix + digest, Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Close()
	b := buf.Bytes()
	b[156] = tar.TypeXHeader // the first header becomes the PAX header of the second
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:512] {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))

	_, err := stageBlobs(tar.NewReader(bytes.NewReader(b)), t.TempDir(), map[string]string{digest: "a package"}, 2<<30)
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(registry.Message(err), "sparse") {
		t.Fatalf("stageBlobs of a sparse entry = %v, want it refused as sparse", err)
	}
}
