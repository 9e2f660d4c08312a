package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	svchost "github.com/hashicorp/terraform-svchost"
)

// The credentials file of `terraform login`, which trove login writes and
// every client command reads: both tools share the tokens in it.
const (
	credentialsFileName = "credentials.tfrc.json"
	// tfCLIConfigDir overrides the directory of the file (~/.terraform.d).
	tfCLIConfigDir = "TF_CLI_CONFIG_DIR"
)

// credentialsPath returns $TF_CLI_CONFIG_DIR/credentials.tfrc.json, else
// $HOME/.terraform.d/credentials.tfrc.json, as Terraform and OpenTofu
// find it on Linux and macOS.
func credentialsPath(getenv func(string) string) (string, error) {
	if d := getenv(tfCLIConfigDir); d != "" {
		return filepath.Join(d, credentialsFileName), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot find the credentials file: neither TF_CLI_CONFIG_DIR nor HOME is set")
	}
	return filepath.Join(home, ".terraform.d", credentialsFileName), nil
}

// credentialsHost returns the host key of the server at addr
// ("https://Registry.Example:443" gives "registry.example"): lower case,
// punycode, the port unless it is 443, as Terraform normalizes host names.
func credentialsHost(addr string) (svchost.Hostname, error) {
	if !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("invalid server address %q: want https://host[:port] or host[:port]", addr)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		// Terraform keys its tokens by host alone and sends them over
		// https only: one must never travel in the clear to that host.
		return "", fmt.Errorf("%s is not https: the tokens of terraform login and trove login are only used over https "+
			"(or plain http to this machine); pass --token for another scheme", addr)
	}
	h, err := svchost.ForComparison(u.Host)
	if err != nil {
		return "", fmt.Errorf("invalid host %q: %w", u.Host, err)
	}
	return h, nil
}

// credentialsHosts returns the host keys a token for the server at addr
// is stored under: its own (credentialsHost) and, for a server on this
// machine (localhost or a loopback address, which Terraform and OpenTofu
// reach as trove.localhost through the host block of `trove serve`), that
// name too, so that one login serves trove, terraform and tofu. Only a
// loopback address gets trove.localhost's token: another address without a
// dot is another machine, which must never be sent it.
func credentialsHosts(addr string) ([]svchost.Hostname, error) {
	host, err := credentialsHost(addr)
	if err != nil {
		return nil, err
	}
	hosts := []svchost.Hostname{host}
	if local := svchost.Hostname(localHostName); host != local && loopbackHost(host) {
		hosts = append(hosts, local)
	}
	return hosts, nil
}

// loopbackHost reports whether host (a normalized host key, with its port
// if any) names this machine.
func loopbackHost(host svchost.Hostname) bool {
	u, err := url.Parse("https://" + host.String())
	return err == nil && isLoopback(u.Hostname())
}

// isLoopback reports whether host names this machine: localhost or a
// loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// credentialsDoc is the credentials file, keeping what trove does not
// read (other top-level keys, other fields of a host) as it was.
type credentialsDoc struct {
	top   map[string]json.RawMessage
	hosts map[string]map[string]json.RawMessage
}

// readCredentials reads the file at path; a missing file is empty.
func readCredentials(path string) (credentialsDoc, error) {
	doc := credentialsDoc{top: map[string]json.RawMessage{}, hosts: map[string]map[string]json.RawMessage{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return doc, nil
	}
	if err := json.Unmarshal(data, &doc.top); err != nil {
		return doc, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	if raw, ok := doc.top["credentials"]; ok {
		if err := json.Unmarshal(raw, &doc.hosts); err != nil {
			return doc, fmt.Errorf("%s: \"credentials\" is not an object of hosts: %w", path, err)
		}
		if doc.hosts == nil {
			doc.hosts = map[string]map[string]json.RawMessage{}
		}
	}
	return doc, nil
}

// key returns the key of host in the file, matched as Terraform matches
// host names, or "".
func (d credentialsDoc) key(host svchost.Hostname) string {
	for k := range d.hosts {
		if h, err := svchost.ForComparison(k); err == nil && h == host {
			return k
		}
	}
	return ""
}

// token returns the token stored for host, or "".
func (d credentialsDoc) token(host svchost.Hostname) string {
	k := d.key(host)
	if k == "" {
		return ""
	}
	var token string
	if raw, ok := d.hosts[k]["token"]; !ok || json.Unmarshal(raw, &token) != nil {
		return ""
	}
	return token
}

// set stores token for host, or with "" removes the host's entry. It
// reports whether the host had an entry before.
func (d credentialsDoc) set(host svchost.Hostname, token string) (existed bool) {
	k := d.key(host)
	existed = k != ""
	if token == "" {
		delete(d.hosts, k)
		return existed
	}
	if k == "" {
		k = host.ForDisplay()
		d.hosts[k] = map[string]json.RawMessage{}
	}
	raw, _ := json.Marshal(token)
	d.hosts[k]["token"] = raw
	return existed
}

// write replaces the file at path atomically, readable by its owner only.
func (d credentialsDoc) write(path string) error {
	hosts, err := json.Marshal(d.hosts)
	if err != nil {
		return err
	}
	d.top["credentials"] = hosts
	data, err := json.MarshalIndent(d.top, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".credentials-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, there is nothing left to remove
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
