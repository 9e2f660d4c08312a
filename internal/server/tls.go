package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// Names of the self-signed certificate files in their directory.
const (
	CAFileName   = "ca.pem"
	CertFileName = "tls.crt"
	KeyFileName  = "tls.key"
)

// Lifetimes of self-signed certificates.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// EnsureSelfSigned returns the TLS files in dir, creating them when they
// are missing, do not cover hosts, do not chain to the CA next to them, or
// expire within 30 days. It generates an ECDSA P-256 CA (valid 10 years)
// and a server certificate signed by it (valid 1 year) for localhost,
// 127.0.0.1, ::1 and every host given (DNS names or IP addresses; a port
// is ignored). The CA's private key is never written: nobody can issue
// more certificates under it, so trusting ca.pem (SSL_CERT_FILE=ca.pem
// for Terraform and OpenTofu) trusts exactly this server. Files are
// written atomically; the key file is 0600.
func EnsureSelfSigned(dir string, hosts []string) (TLSFiles, error) {
	files := TLSFiles{
		CAFile:   filepath.Join(dir, CAFileName),
		CertFile: filepath.Join(dir, CertFileName),
		KeyFile:  filepath.Join(dir, KeyFileName),
	}
	dnsNames, ips, err := certNames(hosts)
	if err != nil {
		return TLSFiles{}, err
	}
	if usable(files, dnsNames, ips, time.Now()) {
		return files, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return TLSFiles{}, registry.Wrap(registry.Internal, err, "creating the TLS directory")
	}
	caPEM, certPEM, keyPEM, err := generate(dnsNames, ips, time.Now())
	if err != nil {
		return TLSFiles{}, err
	}
	// The key first: a crash part-way leaves files that fail usable() and
	// are generated again on the next start.
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{files.KeyFile, keyPEM, 0o600}, {files.CertFile, certPEM, 0o644}, {files.CAFile, caPEM, 0o644}} {
		if err := writeAtomic(f.path, f.data, f.mode); err != nil {
			return TLSFiles{}, err
		}
	}
	return files, nil
}

// certNames splits hosts into the DNS names and IP addresses the
// certificate must carry, always including the loopback names.
func certNames(hosts []string) ([]string, []net.IP, error) {
	dnsNames := []string{"localhost"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				continue // a listen address such as 0.0.0.0 names no host
			}
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(h, "."))
		if !validDNSName(name) {
			return nil, nil, registry.Errorf(registry.Invalid, "cannot issue a certificate for %q: not a host name or IP address", h)
		}
		if !slices.Contains(dnsNames, name) {
			dnsNames = append(dnsNames, name)
		}
	}
	return dnsNames, ips, nil
}

func validDNSName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// usable reports whether the files exist, the key matches the
// certificate, the certificate chains to the CA for every name, and
// neither expires within renewBefore.
func usable(files TLSFiles, dnsNames []string, ips []net.IP, now time.Time) bool {
	pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil || len(pair.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	caPEM, err := os.ReadFile(files.CAFile)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return false
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA {
		return false
	}
	soon := now.Add(renewBefore)
	if soon.After(leaf.NotAfter) || soon.After(ca.NotAfter) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	names := slices.Clone(dnsNames)
	for _, ip := range ips {
		names = append(names, ip.String())
	}
	for _, name := range names {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return false
		}
	}
	return true
}

// generate returns PEM encodings of a new CA certificate, a server
// certificate signed by it, and the server's private key.
func generate(dnsNames []string, ips []net.IP, now time.Time) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "generating the CA key")
	}
	host, _ := os.Hostname()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"Trove"}, CommonName: fmt.Sprintf("Trove self-signed CA (%s, %s)", host, now.UTC().Format("2006-01-02"))},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "creating the CA certificate")
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "parsing the CA certificate")
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "generating the server key")
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"Trove"}, CommonName: dnsNames[len(dnsNames)-1]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "creating the server certificate")
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, registry.Wrap(registry.Internal, err, "encoding the server key")
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// writeAtomic writes data to path through a synced temporary file in the
// same directory and a rename.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename this fails harmlessly
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	if err := f.Close(); err != nil {
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return registry.Wrap(registry.Internal, err, "writing "+path)
	}
	return nil
}
