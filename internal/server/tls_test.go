package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s holds no PEM certificate", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsureSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	files, err := EnsureSelfSigned(dir, []string{"trove.test", "Trove.Test:8443", "10.1.2.3", "[fd00::1]:443", "0.0.0.0", ""})
	if err != nil {
		t.Fatal(err)
	}
	if files.CAFile != filepath.Join(dir, "ca.pem") || files.CertFile != filepath.Join(dir, "tls.crt") || files.KeyFile != filepath.Join(dir, "tls.key") {
		t.Fatalf("files %+v", files)
	}
	ca := readCert(t, files.CAFile)
	leaf := readCert(t, files.CertFile)
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA %v, key usage %v", ca.IsCA, ca.KeyUsage)
	}
	if left := time.Until(ca.NotAfter); left < 9*365*24*time.Hour {
		t.Errorf("CA valid for %v, want about 10 years", left)
	}
	if left := time.Until(leaf.NotAfter); left < 360*24*time.Hour || left > 366*24*time.Hour {
		t.Errorf("server certificate valid for %v, want about a year", left)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("server key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if leaf.IsCA {
		t.Errorf("server certificate is a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"localhost", "trove.test", "127.0.0.1", "::1", "10.1.2.3", "fd00::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", name, err)
		}
	}
	for _, name := range []string{"0.0.0.0", "other.test"} {
		if err := leaf.VerifyHostname(name); err == nil {
			t.Errorf("certificate is valid for %s", name)
		}
	}
	if len(leaf.DNSNames) != 2 {
		t.Errorf("DNS names %v, want localhost and trove.test once each", leaf.DNSNames)
	}
	fi, err := os.Stat(files.KeyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if _, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile); err != nil {
		t.Fatalf("key does not match certificate: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Fatalf("%d files in %s, want exactly 3 (no temporary files, no CA key)", len(entries), dir)
	}

	// Reused when still good for the same (or fewer) hosts.
	certBefore, _ := os.ReadFile(files.CertFile)
	if _, err := EnsureSelfSigned(dir, []string{"trove.test"}); err != nil {
		t.Fatal(err)
	}
	if certAfter, _ := os.ReadFile(files.CertFile); !bytes.Equal(certBefore, certAfter) {
		t.Fatalf("certificate regenerated although it covers the hosts")
	}
	// Regenerated for a host it does not cover.
	if _, err := EnsureSelfSigned(dir, []string{"new.test"}); err != nil {
		t.Fatal(err)
	}
	if err := readCert(t, files.CertFile).VerifyHostname("new.test"); err != nil {
		t.Fatalf("after adding a host: %v", err)
	}
}

func TestUsable(t *testing.T) {
	dir := t.TempDir()
	files, err := EnsureSelfSigned(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	dns, ips, _ := certNames(nil)
	now := time.Now()
	if !usable(files, dns, ips, now) {
		t.Fatal("fresh files not usable")
	}
	if usable(files, dns, ips, now.Add(leafLifetime-renewBefore+time.Hour)) {
		t.Error("usable although the certificate expires within 30 days")
	}
	// A certificate from another CA (say a crash between renames) is replaced.
	other := t.TempDir()
	otherFiles, err := EnsureSelfSigned(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	mixed := TLSFiles{CAFile: otherFiles.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile}
	if usable(mixed, dns, ips, now) {
		t.Error("usable although the certificate does not chain to the CA")
	}
	if usable(TLSFiles{CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: otherFiles.KeyFile}, dns, ips, now) {
		t.Error("usable although the key does not match")
	}
	if err := os.WriteFile(files.CAFile, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureSelfSigned(dir, nil); err != nil {
		t.Fatal(err)
	}
	if !usable(files, dns, ips, now) {
		t.Error("a damaged CA file was not replaced")
	}
}

func TestCertNamesRejectsGarbage(t *testing.T) {
	tests := map[string]bool{
		"trove.test": true, "localhost:8443": true, "::1": true, "[::1]:8443": true, "a-b.example": true,
		"bad host": false, "-x.test": false, "x..test": false, "héllo.test": false, "a/b": false,
	}
	for host, ok := range tests {
		_, _, err := certNames([]string{host})
		if (err == nil) != ok {
			t.Errorf("certNames(%q) error = %v, want ok=%v", host, err, ok)
		}
	}
	_, ips, _ := certNames([]string{"127.0.0.1", "::1"})
	if len(ips) != 2 || !ips[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("loopback addresses duplicated: %v", ips)
	}
}
