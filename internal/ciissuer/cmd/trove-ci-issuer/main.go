// Command trove-ci-issuer serves a stand-in CI OpenID Connect issuer
// (package ciissuer) on a loopback port for tests of keyless publishing.
// It prints two lines and serves until killed:
//
//	issuer http://127.0.0.1:<port>
//	request-token <token for the Authorization header of /token>
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"

	"trove.dev/trove/internal/ciissuer"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "trove-ci-issuer:", err)
		os.Exit(1)
	}
}

func run() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	requestToken := hex.EncodeToString(b)
	url := "http://" + ln.Addr().String()
	is, err := ciissuer.New(url, requestToken)
	if err != nil {
		return err
	}
	fmt.Printf("issuer %s\nrequest-token %s\n", url, requestToken)
	return http.Serve(ln, is.Handler())
}
