package gitsource

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/netguard/netguardtest"
	"trove.dev/trove/internal/registry"
)

// TestCreateRefusesNonPublicHosts is the hostile table of repository
// URLs naming a non-public address in any form: refused with the flag
// that allows them, nothing stored; allowed with the flag.
func TestCreateRefusesNonPublicHosts(t *testing.T) {
	e := newGuardedEnv(t, 0, netguard.Guard{})
	urls := []string{
		"https://127.0.0.1/net.git", "https://127.1/net.git", "http://0x7f.1/net.git", "http://2130706433/net.git",
		"https://0177.0.0.1/net.git", "https://[0:0:0:0:0:ffff:7f00:1]/net.git", "https://[0:0:0:0:0:0:0:1]:8443/net.git",
		"http://169.254.169.254/latest/meta-data", "https://[fd00:0:0:0:0:0:0:1]/net.git", "https://10.0.0.7/net.git",
		"https://localhost/net.git", "https://localhost./net.git", "https://LOCALHOST/net.git", "https://git.localhost/net.git",
		"git://127.0.0.1/net.git", "git://[fe80:0:0:0:0:0:0:1%25eth0]/net.git", "ssh://git@127.0.0.1:2222/net.git",
		"git@127.0.0.1:net.git", "git@[0:0:0:0:0:0:0:1]:net.git", "[git@127.0.0.1:2222]:net.git", "localhost:net.git", "git@169.254.169.254:net.git",
		"0.0.0.0:net.git",
	}
	// IPv6 addresses abbreviated with "::" are refused by the URL rules
	// already (the transport::address form).
	urls = append(urls, "https://[::ffff:127.0.0.1]/net.git", "https://[::1]/net.git", "git@[fd00::1]:net.git")
	for _, u := range urls {
		_, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: u})
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(u, "::") && (!strings.Contains(registry.Message(err), "public addresses only") ||
			!strings.Contains(registry.Message(err), AllowPrivateFlag)) {
			t.Errorf("Create(%s) = %v, want Invalid naming %s", u, err, AllowPrivateFlag)
		}
	}
	if all, err := e.idx.ListGitSources(t.Context(), ""); err != nil || len(all) != 0 {
		t.Fatalf("stored %v, %v", all, err)
	}
	allowed := newEnv(t, 0)
	if _, err := allowed.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: "git@[0:0:0:0:0:0:0:1]:net.git"}); err != nil {
		t.Fatalf("Create with %s: %v", AllowPrivateFlag, err)
	}
}

// TestSyncRefusesNonPublicAtFetch runs real git servers on loopback (http,
// git daemon, ssh) and syncs from them through a name that resolves to
// 127.0.0.1 (accepted at creation: a name), and through their literal
// address stored while private addresses were allowed (a server since
// restarted without the flag): every sync is refused before git runs,
// nothing is published, and the source's last error says why.
func TestSyncRefusesNonPublicAtFetch(t *testing.T) {
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF})
	gst.Git(t, repo, "tag", "v1.0.0")
	key := gst.NewSSHKey(t)
	sshBase, knownHosts := gst.SSH(t, root, key.Public)
	bases := map[string]string{"http": gst.HTTP(t, root, "ci", "tok3n"), "git": gst.Daemon(t, root), "ssh": sshBase}
	resolver := netguardtest.DNS(t, map[string][]netip.Addr{"git.trove.test": {netip.MustParseAddr("127.0.0.1")}})
	for transport, base := range bases {
		if !strings.Contains(base, "127.0.0.1") {
			t.Fatalf("%s server at %s, not on 127.0.0.1", transport, base)
		}
		for _, viaName := range []bool{true, false} {
			t.Run(transport+map[bool]string{true: " by name", false: " by address"}[viaName], func(t *testing.T) {
				e := newGuardedEnv(t, 0, netguard.Guard{Resolver: resolver})
				u := base + "net"
				src := Source{Namespace: "acme", Name: "net", System: "aws"}
				switch transport {
				case "ssh":
					src.Auth, src.SSHKey, src.KnownHosts = registry.GitAuthSSH, key.Private, knownHosts
				case "http":
					src.Auth, src.Username, src.Password = registry.GitAuthBasic, "ci", "tok3n"
				}
				if viaName {
					src.URL = strings.Replace(u, "127.0.0.1", "git.trove.test", 1)
					if _, err := e.svc.Create(t.Context(), src); err != nil {
						t.Fatal(err)
					}
				} else {
					// Stored by a server that allowed private addresses.
					src.URL = u
					allowing := New(Options{Index: e.idx, Secret: e.svc.opt.Secret, Guard: netguard.Guard{AllowPrivate: true}})
					if _, err := allowing.Create(t.Context(), src); err != nil {
						t.Fatal(err)
					}
				}
				rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
				if err == nil || !strings.Contains(registry.Message(err), "non-public address") || !strings.Contains(registry.Message(err), AllowPrivateFlag) || len(rep.Published) != 0 {
					t.Fatalf("sync = %+v, %v; want a refusal naming %s", rep, err, AllowPrivateFlag)
				}
				if vs := e.versions(t); len(vs) != 0 {
					t.Fatalf("published %v", keys(vs))
				}
				g, _ := e.idx.GetGitSource(t.Context(), "acme", "net", "aws")
				if !strings.Contains(g.LastError, "non-public address") {
					t.Fatalf("last error %q", g.LastError)
				}
			})
		}
	}
	// The control: the same servers serve the module when private
	// addresses are allowed, so the refusals above are the guard's.
	e := newEnv(t, 0)
	if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: bases["http"] + "net",
		Auth: registry.GitAuthBasic, Username: "ci", Password: "tok3n"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test"); err != nil || !slices.Equal(rep.Published, []string{"1.0.0"}) {
		t.Fatalf("sync with %s: %+v, %v", AllowPrivateFlag, rep, err)
	}
}

// TestPin checks where each transport is pinned: the address the guard
// allowed, the name kept for TLS and host keys.
func TestPin(t *testing.T) {
	g := netguard.Guard{Resolver: netguardtest.DNS(t, map[string][]netip.Addr{
		"git.trove.test": {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("93.184.215.14")},
	})}
	for raw, want := range map[string]string{
		"https://git.trove.test/net.git":       "config http.curloptResolve=git.trove.test:443:93.184.215.14",
		"http://Git.Trove.Test:8080/net.git":   "config http.curloptResolve=git.trove.test:8080:93.184.215.14",
		"git://git.trove.test/net.git":         "url git://93.184.215.14:9418/net.git",
		"git@git.trove.test:net.git":           "ssh -o HostName=93.184.215.14 -o HostKeyAlias='git.trove.test' -o CheckHostIP=no",
		"ssh://git@git.trove.test:2222/net":    "ssh -o HostName=93.184.215.14 -o HostKeyAlias='[git.trove.test]:2222' -o CheckHostIP=no",
		"[git@git.trove.test:2200]:net.git":    "ssh -o HostName=93.184.215.14 -o HostKeyAlias='[git.trove.test]:2200' -o CheckHostIP=no",
		"https://[2606:4700::1111]/net.git":    "config http.curloptResolve=[2606:4700::1111]:443:[2606:4700::1111]",
		"ssh://git@[2606:4700::1111]/net.git":  "ssh -o HostName=2606:4700::1111 -o HostKeyAlias='2606:4700::1111' -o CheckHostIP=no",
		"git@[2606:4700::1111]:net.git":        "ssh -o HostName=2606:4700::1111 -o HostKeyAlias='2606:4700::1111' -o CheckHostIP=no",
		"git://[2606:4700::1111]:9000/net.git": "url git://[2606:4700::1111]:9000/net.git",
	} {
		p, err := pinTo(t.Context(), g, raw)
		if err != nil {
			t.Errorf("pinTo(%s): %v", raw, err)
			continue
		}
		var got string
		switch {
		case len(p.config) > 0:
			got = "config " + p.config[0][0] + "=" + p.config[0][1]
		case p.sshOpts != "":
			got = "ssh" + p.sshOpts
		default:
			got = "url " + p.url
		}
		if got != want {
			t.Errorf("pinTo(%s) = %s, want %s", raw, got, want)
		}
	}
	if p, err := pinTo(t.Context(), netguard.Guard{AllowPrivate: true}, "https://git.trove.test/x"); err != nil || len(p.config) != 0 || p.url != "https://git.trove.test/x" {
		t.Errorf("pinTo with AllowPrivate = %+v, %v; want no pin", p, err)
	}
}

// TestPinnedGitConnectsToTheAddress runs git, pinned, against real
// servers on loopback through a name no resolver knows: git reaches the
// pinned address (so it does not resolve the name itself), over ssh with
// the host key checked under the name.
func TestPinnedGitConnectsToTheAddress(t *testing.T) {
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF})
	gst.Git(t, repo, "tag", "v1.0.0")
	key := gst.NewSSHKey(t)
	sshBase, knownHosts := gst.SSH(t, root, key.Public)
	loopback := netip.MustParseAddr("127.0.0.1")
	for transport, base := range map[string]string{"http": gst.HTTP(t, root, "ci", "tok3n"), "git": gst.Daemon(t, root), "ssh": sshBase} {
		t.Run(transport, func(t *testing.T) {
			u := strings.Replace(base, "127.0.0.1", "unresolvable.trove.test", 1) + "net"
			src := registry.GitSource{URL: u, Auth: registry.GitAuthNone}
			var creds credentials
			switch transport {
			case "ssh":
				src.Auth, src.KnownHosts, creds.SSHKey = registry.GitAuthSSH, strings.Replace(knownHosts, "127.0.0.1", "unresolvable.trove.test", 1), key.Private
			case "http":
				src.Auth, src.Username, creds.Password = registry.GitAuthBasic, "ci", "tok3n"
			}
			r, err := parseRemote(u)
			if err != nil {
				t.Fatal(err)
			}
			run, err := newRunner(t.TempDir(), src, pinAddr(u, r, loopback), creds, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			tags, err := run.listTags(t.Context())
			if err != nil || len(tags) != 1 || tags[0].Tag != "v1.0.0" {
				t.Fatalf("pinned ls-remote of %s = %v, %v", u, tags, err)
			}
			// Unpinned, the name does not resolve: the pin is what worked.
			run, err = newRunner(t.TempDir(), src, pin{url: u}, creds, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run.listTags(t.Context()); err == nil {
				t.Fatalf("unpinned ls-remote of %s worked", u)
			}
		})
	}
}
