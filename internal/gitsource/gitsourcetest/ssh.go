package gitsourcetest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHKey is a client key pair for SSH.
type SSHKey struct {
	Private string // OpenSSH PEM
	Public  ssh.PublicKey
}

// NewSSHKey generates an ed25519 client key.
func NewSSHKey(t testing.TB) SSHKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return SSHKey{Private: string(pem.EncodeToMemory(block)), Public: sp}
}

// SSH serves the repositories under root over SSH on loopback to the
// client key authorized: a server written for the test that runs only
// `git upload-pack` (what fetches ask for), with the real ssh client on
// the other side. It returns the base URL (ssh://git@127.0.0.1:PORT/) and
// the known_hosts line of its host key.
func SSH(t testing.TB, root string, authorized ssh.PublicKey) (base, knownHosts string) {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	config := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), authorized.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	config.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSSH(c, config, root)
			}()
		}
	}()
	addr := l.Addr().String()
	return "ssh://git@" + addr + "/", knownhosts.Line([]string{addr}, hostKey.PublicKey())
}

// serveSSH serves one connection: exec requests of git-upload-pack only.
func serveSSH(c net.Conn, config *ssh.ServerConfig, root string) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range requests {
				if req.Type != "exec" || len(req.Payload) < 4 {
					req.Reply(false, nil)
					continue
				}
				n := binary.BigEndian.Uint32(req.Payload)
				cmdline := string(req.Payload[4:][:min(int(n), len(req.Payload)-4)])
				prog, arg, _ := strings.Cut(cmdline, " ")
				repo := filepath.Join(root, filepath.FromSlash(path.Clean("/"+strings.Trim(arg, "'"))))
				if prog != "git-upload-pack" {
					req.Reply(false, nil)
					continue
				}
				req.Reply(true, nil)
				cmd := exec.Command("git", "upload-pack", repo)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				code := uint32(0)
				if err := cmd.Run(); err != nil {
					code = 1
				}
				ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, code))
				return
			}
		}()
	}
}
