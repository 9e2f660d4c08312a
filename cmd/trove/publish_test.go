package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishChecksBeforeUpload breaks a valid release in the ways a
// user does and expects trove publish to say so without sending a byte.
func TestPublishChecksBeforeUpload(t *testing.T) {
	const (
		sums  = "terraform-provider-foo_1.0.0_SHA256SUMS"
		sig   = sums + ".sig"
		linux = "terraform-provider-foo_1.0.0_linux_amd64.zip"
		arm   = "terraform-provider-foo_1.0.0_darwin_arm64.zip"
	)
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		files []string
		spoil func(t *testing.T, dir string)
		want  string
	}{
		{"armored signature", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, sig, "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJ\n-----END PGP SIGNATURE-----\n")
		}, "sign with gpg --detach-sign, without --armor"},
		{"signature is text", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, sig, "not a signature")
		}, "not a binary OpenPGP signature"},
		{"SHA256SUMS with the binary marker", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, sums, strings.Repeat("a", 64)+" *"+linux+"\n")
		}, `"*" binary marker`},
		{"zip not listed", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, arm, "a zip built later")
		}, arm + " is not listed in " + sums},
		{"listed zip missing", []string{sums, sig, linux, arm}, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, arm))
		}, sums + " lists " + arm + ", which is missing"},
		{"zip changed after signing", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, linux, "rebuilt")
		}, "the file changed after SHA256SUMS was written"},
		{"bad platform", []string{sums, sig, "terraform-provider-foo_1.0.0_Linux_amd64.zip"}, nil, `invalid operating system "Linux"`},
		{"bad version", []string{"terraform-provider-foo_1.0_SHA256SUMS"}, nil, "1.0"},
		{"manifest listed but missing", []string{sums, sig, linux, "terraform-provider-foo_1.0.0_manifest.json"}, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "terraform-provider-foo_1.0.0_manifest.json"))
		}, "or pass --manifest FILE"},
		{"manifest in dist not listed", []string{sums, sig, linux}, func(t *testing.T, dir string) {
			write(t, dir, "terraform-provider-foo_1.0.0_manifest.json", `{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}`)
		}, "terraform-provider-foo_1.0.0_manifest.json is not listed in " + sums + ", and the server accepts only a manifest that SHA256SUMS covers"},
		{"manifest in dist changed", []string{sums, sig, linux, "terraform-provider-foo_1.0.0_manifest.json"}, func(t *testing.T, dir string) {
			write(t, dir, "terraform-provider-foo_1.0.0_manifest.json", `{"version": 1, "metadata": {"protocol_versions": ["5.0"]}}`)
		}, "terraform-provider-foo_1.0.0_manifest.json has checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDist(t, tt.files...)
			if tt.spoil != nil {
				tt.spoil(t, dir)
			}
			f := newFakeAPI(t)
			r := runTrove(t, f.env(), "", "publish", "--namespace", "acme", dir)
			if r.code != exitError || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 mentioning %q", r.code, r.stderr, tt.want)
			}
			if f.last.method != "" {
				t.Errorf("trove publish sent %s %s before finding the problem", f.last.method, f.last.path)
			}
		})
	}
}

func TestModulePublishChecksBeforeUpload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("variable \"x\" {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acme/network/aws", "v1.2.0", dir}, `drop the leading "v"`},
		{[]string{"acme/network/aws", "1.2", dir}, "1.2"},
		{[]string{"acme/net work/aws", "1.2.0", dir}, "net work"},
		{[]string{"acme/network/AWS!", "1.2.0", dir}, "AWS!"},
	} {
		f := newFakeAPI(t)
		r := runTrove(t, f.env(), "", append([]string{"module", "publish"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "Usage: trove module publish") {
			t.Errorf("module publish %q: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, r.code, r.stderr, tc.want)
		}
		if f.last.method != "" {
			t.Errorf("module publish %q sent %s %s", tc.args, f.last.method, f.last.path)
		}
	}
}
