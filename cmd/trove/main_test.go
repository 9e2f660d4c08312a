package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// result is the outcome of one run of the command line.
type result struct {
	code           int
	stdout, stderr string
}

// runTrove runs the command line with the given environment and stdin.
func runTrove(t *testing.T, environ map[string]string, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return environ[k] }
	code := run(context.Background(), args, getenv, strings.NewReader(stdin), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage: trove COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--addr", "X", "namespace", "list"}, "trove: flags go after the command: trove namespace list --addr X\n"},
		{[]string{"--json", "token", "revoke", "tok_1"}, "trove: flags go after the command: trove token revoke tok_1 --json\n"},
		{[]string{"--addr", "X"}, "trove: flags go after the command: trove COMMAND [ARGS] [FLAGS]\n"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"namespace"}, "Usage: trove namespace SUBCOMMAND"},
		{[]string{"namespace", "rename"}, `unknown subcommand "rename"`},
		{[]string{"namespace", "create"}, "missing arguments: want NAME"},
		{[]string{"namespace", "create", "a", "b"}, `unexpected argument "b"`},
		{[]string{"namespace", "create", "a", "--colour", "red"}, "trove namespace create: unknown flag --colour\n"},
		{[]string{"namspace", "list"}, `unknown command "namspace" (did you mean namespace?)`},
		{[]string{"namespace", "lsit"}, `unknown subcommand "lsit" (did you mean list?)`},
		{[]string{"namespace", "list", "--jsn"}, "unknown flag --jsn (did you mean --json?)"},
		{[]string{"token", "create", "--namspace", "acme"}, "unknown flag --namspace (did you mean --namespace?)"},
		{[]string{"namespace", "create", "a", "--description"}, "--description needs a value"},
		{[]string{"namespace", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"key", "add", "acme"}, "--file is required"},
		{[]string{"key", "remove", "acme"}, "missing arguments: want NAMESPACE KEY_ID"},
		{[]string{"token", "create"}, "--scope is required"},
		{[]string{"token", "create", "--scope", " , "}, "--scope is required"},
		{[]string{"token", "create", "--scope", "read", "--expires-in", "30d"}, "--expires-in: want a duration such as 24h, 90m or 30s, got \"30d\""},
		{[]string{"token", "create", "--scope", "read", "--expires-in", "-1h"}, "--expires-in must be positive, got -1h\n"},
		{[]string{"token", "revoke"}, "missing arguments: want ID"},
		{[]string{"publish", "dist"}, "--namespace is required"},
		{[]string{"publish", "--namespace", "acme"}, "missing arguments: want --namespace NS [--manifest FILE] [--oidc-audience AUD] DIR"},
		{[]string{"provider", "show", "acme"}, "want NAMESPACE/TYPE"},
		{[]string{"provider", "show", "acme/foo/bar"}, "want NAMESPACE/TYPE"},
		{[]string{"provider", "show", "/foo"}, "want NAMESPACE/TYPE"},
		{[]string{"provider", "show", "acme/foo", "1.0.0", "x"}, `unexpected argument "x"`},
		{[]string{"version", "x"}, `unexpected argument "x"`},
		{[]string{"serve", "--listen", "nope"}, `invalid --listen "nope"`},
		{[]string{"serve", "--insecure-http"}, "--insecure-http needs --public-url"},
		{[]string{"serve", "now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runTrove(t, map[string]string{"HOME": t.TempDir()}, "", tt.args...)
			if r.code != exitUsage {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		for _, form := range [][]string{
			append(strings.Fields(c.name), "--help"),
			append([]string{"help"}, strings.Fields(c.name)...),
			append(strings.Fields(c.name), "-h"),
		} {
			t.Run(strings.Join(form, " "), func(t *testing.T) {
				r := runTrove(t, nil, "", form...)
				if r.code != exitOK {
					t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
				}
				// Wrapped to the terminal: compared with white space folded.
				folded := strings.Join(strings.Fields(r.stdout), " ")
				for _, want := range []string{"Usage: trove " + c.name, c.summary} {
					if !strings.Contains(folded, strings.Join(strings.Fields(want), " ")) {
						t.Errorf("help does not contain %q:\n%s", want, r.stdout)
					}
				}
				if !strings.Contains(r.stdout, "Examples:\n") {
					t.Errorf("help has no examples:\n%s", r.stdout)
				}
				if _, examples, _ := strings.Cut(r.stdout, "Examples:\n"); !strings.Contains(examples, "trove "+c.name) {
					t.Errorf("no example runs trove %s:\n%s", c.name, r.stdout)
				}
				if c.client && !strings.Contains(r.stdout, "[$TROVE_ADDR]") || c.client && !c.connOnly && !strings.Contains(r.stdout, "[$TROVE_TOKEN]") {
					t.Errorf("help of a client command does not list the client flags:\n%s", r.stdout)
				}
			})
		}
	}
	r := runTrove(t, nil, "", "serve", "--help")
	for _, want := range []string{"--data-dir directory", "[$TROVE_DATA_DIR]", "--max-upload-bytes bytes", "(default 2GiB)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("serve help does not contain %q:\n%s", want, r.stdout)
		}
	}
	r = runTrove(t, nil, "", "token", "--help")
	if r.code != exitOK || !strings.Contains(r.stdout, "token revoke") {
		t.Errorf("trove token --help = %d %q", r.code, r.stdout)
	}
	r = runTrove(t, nil, "", "help")
	if r.code != exitOK || !strings.Contains(r.stdout, "provider show") {
		t.Errorf("trove help = %d %q", r.code, r.stdout)
	}
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		ns, desc   string
		json       bool
	}{
		{[]string{"a"}, []string{"a"}, "", "", false},
		{[]string{"--namespace", "acme", "a"}, []string{"a"}, "acme", "", false},
		{[]string{"a", "--namespace", "acme"}, []string{"a"}, "acme", "", false},
		{[]string{"a", "--json", "b", "--namespace=acme", "c"}, []string{"a", "b", "c"}, "acme", "", true},
		{[]string{"-namespace", "acme", "a", "-json"}, []string{"a"}, "acme", "", true},
		{[]string{"a", "--", "--json", "b"}, []string{"a", "--json", "b"}, "", "", false},
		{[]string{"--", "-x"}, []string{"-x"}, "", "", false},
		{[]string{"a", "--description", "with spaces", "b"}, []string{"a", "b"}, "", "with spaces", false},
		{[]string{"a", "--description", "-", "b"}, []string{"a", "b"}, "", "-", false},
		{[]string{"-", "--json"}, []string{"-"}, "", "", true},
		{nil, nil, "", "", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			ns := fs.String("namespace", "", "")
			desc := fs.String("description", "", "")
			js := fs.Bool("json", false, "")
			got, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.positional) || *ns != tt.ns || *desc != tt.desc || *js != tt.json {
				t.Errorf("got %q ns=%q desc=%q json=%v, want %q ns=%q desc=%q json=%v",
					got, *ns, *desc, *js, tt.positional, tt.ns, tt.desc, tt.json)
			}
		})
	}
}

// fakeAPI is an httptest server answering the management API routes with
// canned documents and recording the last request.
type fakeAPI struct {
	*httptest.Server
	caFile string
	last   struct {
		method, path, query, auth, body string
		parts                           []string // multipart: "name=filename:content"
	}
	status  int    // when non-zero, every answer is this status ...
	errBody string // ... with this body
	created bool   // the answer to a publish
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{created: true}
	ns := apispec.Namespace{Name: "acme", Description: "ACME team"}
	key := apispec.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: "AAAABBBBCCCCDDDDEEEEFFFF0000111122223333"}
	// tok is answered as a Trove before namespace sets did; tok2 is bound to two.
	tok := apispec.Token{ID: "tok_1", Namespace: "acme", Scopes: []string{"publish"}, Description: "ci"}
	tok2 := apispec.Token{ID: "tok_2", Namespaces: []string{"acme", "other"}, Scopes: []string{"read"}}
	pv := apispec.ProviderVersion{Namespace: "acme", Type: "foo", Version: "1.0.0", Protocols: []string{"5.0"},
		Platforms: []apispec.Platform{
			{OS: "linux", Arch: "amd64", Filename: "terraform-provider-foo_1.0.0_linux_amd64.zip", SHASum: "aa", Size: 2048},
			{OS: "darwin", Arch: "arm64", Filename: "terraform-provider-foo_1.0.0_darwin_arm64.zip", SHASum: "bb", Size: 10},
		}}
	answers := map[string]any{
		"GET " + apispec.RouteNamespaces:      apispec.NamespaceList{Namespaces: []apispec.Namespace{ns}},
		"POST " + apispec.RouteNamespaces:     ns,
		"GET " + apispec.RouteNamespace:       ns,
		"DELETE " + apispec.RouteNamespace:    nil,
		"GET " + apispec.RouteKeys:            apispec.SigningKeyList{Keys: []apispec.SigningKey{key}},
		"POST " + apispec.RouteKeys:           key,
		"DELETE " + apispec.RouteKey:          nil,
		"GET " + apispec.RouteTokens:          apispec.TokenList{Tokens: []apispec.Token{tok, tok2}},
		"POST " + apispec.RouteTokens:         apispec.CreatedToken{Token: tok, Secret: "trove_secret"},
		"DELETE " + apispec.RouteToken:        nil,
		"GET " + apispec.RouteProviders:       apispec.ProviderList{Providers: []apispec.Provider{{Namespace: "acme", Type: "foo", VersionCount: 1, LatestVersion: "1.0.0"}}},
		"GET " + apispec.RouteProvider:        apispec.ProviderDetail{Namespace: "acme", Type: "foo", Versions: []apispec.ProviderVersion{pv}},
		"GET " + apispec.RouteProviderVersion: pv,
	}
	mux := http.NewServeMux()
	for pattern, answer := range answers {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			f.record(r)
			if f.status != 0 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(f.status)
				io.WriteString(w, f.errBody)
				return
			}
			if answer == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(answer)
		})
	}
	mux.HandleFunc("POST "+apispec.RouteProviderVersion, func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if f.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			io.WriteString(w, f.errBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(apispec.PublishResult{Created: f.created, Version: pv})
	})
	f.Server = httptest.NewUnstartedServer(mux)
	f.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-CA test fails handshakes on purpose
	f.StartTLS()
	t.Cleanup(f.Close)
	f.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})
	if err := os.WriteFile(f.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeAPI) record(r *http.Request) {
	f.last.method, f.last.path, f.last.query = r.Method, r.URL.EscapedPath(), r.URL.RawQuery
	f.last.auth = r.Header.Get("Authorization")
	f.last.parts = nil
	if mr, err := r.MultipartReader(); err == nil {
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			f.last.parts = append(f.last.parts, p.FormName()+"="+p.FileName()+":"+string(b))
		}
		return
	}
	b, _ := io.ReadAll(r.Body)
	f.last.body = string(b)
}

// env returns the environment of a client command talking to f.
func (f *fakeAPI) env() map[string]string {
	return map[string]string{"TROVE_ADDR": f.URL, "TROVE_TOKEN": "trove_admin", "TROVE_CA_FILE": f.caFile}
}

// TestClientCommands checks, per command line, the request sent and the
// text printed.
func TestClientCommands(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key.asc")
	armored := "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n"
	os.WriteFile(keyFile, []byte(armored), 0o600)
	tests := []struct {
		args     []string
		stdin    string
		request  string // "METHOD path?query"
		body     string // JSON request body, "" for none
		stdout   []string
		notInOut string
	}{
		{[]string{"namespace", "create", "acme", "--description", "ACME team"}, "", "POST /api/v1/namespaces?",
			`{"name":"acme","description":"ACME team"}`, []string{"Created namespace acme\n"}, ""},
		{[]string{"namespace", "list"}, "", "GET /api/v1/namespaces?", "", []string{"NAME", "DESCRIPTION", "acme", "ACME team"}, ""},
		{[]string{"namespace", "list", "--json"}, "", "GET /api/v1/namespaces?", "", []string{`"namespaces": [`, `"name": "acme"`}, ""},
		{[]string{"namespace", "show", "acme"}, "", "GET /api/v1/namespaces/acme?", "", []string{"Name:", "acme", "Description:", "ACME team"}, ""},
		{[]string{"namespace", "delete", "acme"}, "", "DELETE /api/v1/namespaces/acme?", "", []string{"Deleted namespace acme\n"}, ""},
		{[]string{"key", "add", "--file", keyFile, "acme"}, "", "POST /api/v1/namespaces/acme/keys?",
			mustJSON(apispec.AddSigningKeyRequest{ASCIIArmor: armored}), []string{"Added signing key 0123456789ABCDEF to namespace acme", "Fingerprint: AAAABBBB"}, ""},
		{[]string{"key", "add", "acme", "--file", "-"}, armored, "POST /api/v1/namespaces/acme/keys?",
			mustJSON(apispec.AddSigningKeyRequest{ASCIIArmor: armored}), []string{"0123456789ABCDEF"}, ""},
		{[]string{"key", "generate", "acme"}, "", "POST /api/v1/namespaces/acme/keys?", `{"managed":true}`,
			[]string{"Generated managed signing key 0123456789ABCDEF for namespace acme", "Fingerprint: AAAABBBB", "without a .sig"}, "PRIVATE"},
		{[]string{"key", "list", "acme"}, "", "GET /api/v1/namespaces/acme/keys?", "", []string{"KEY ID", "KIND", "0123456789ABCDEF", "uploaded", "never"}, ""},
		{[]string{"key", "remove", "acme", "0123456789ABCDEF"}, "", "DELETE /api/v1/namespaces/acme/keys/0123456789ABCDEF?", "",
			[]string{"Removed signing key 0123456789ABCDEF from namespace acme"}, ""},
		{[]string{"token", "list", "--namespace", "acme"}, "", "GET /api/v1/tokens?namespace=acme", "",
			[]string{"NAMESPACES", "tok_1  acme ", "publish", "active", "tok_2  acme,other "}, "trove_"},
		{[]string{"token", "list"}, "", "GET /api/v1/tokens?", "", []string{"tok_1"}, ""},
		{[]string{"token", "revoke", "tok_1"}, "", "DELETE /api/v1/tokens/tok_1?", "", []string{"Revoked token tok_1"}, ""},
		{[]string{"provider", "list", "acme"}, "", "GET /api/v1/namespaces/acme/providers?", "", []string{"acme/foo", "1.0.0"}, ""},
		{[]string{"provider", "show", "acme/foo"}, "", "GET /api/v1/namespaces/acme/providers/foo?", "", []string{"VERSION", "1.0.0", "linux_amd64, darwin_arm64"}, ""},
		{[]string{"provider", "show", "acme/foo", "1.0.0"}, "", "GET /api/v1/namespaces/acme/providers/foo/versions/1.0.0?", "",
			[]string{"Version:", "linux_amd64", "2.0 KiB", "terraform-provider-foo_1.0.0_darwin_arm64.zip"}, ""},
		{[]string{"provider", "show", "acme/foo", "1.0.0", "--json"}, "", "GET /api/v1/namespaces/acme/providers/foo/versions/1.0.0?", "",
			[]string{`"version": "1.0.0"`}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := newFakeAPI(t)
			r := runTrove(t, f.env(), tt.stdin, tt.args...)
			if r.code != exitOK {
				t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
			}
			if got := f.last.method + " " + f.last.path + "?" + f.last.query; got != tt.request {
				t.Errorf("request = %s, want %s", got, tt.request)
			}
			if f.last.auth != "Bearer trove_admin" {
				t.Errorf("Authorization = %q", f.last.auth)
			}
			if tt.body != "" && !jsonEqual(t, f.last.body, tt.body) {
				t.Errorf("body = %s, want %s", f.last.body, tt.body)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, r.stdout)
				}
			}
			if tt.notInOut != "" && strings.Contains(r.stdout, tt.notInOut) {
				t.Errorf("stdout contains %q:\n%s", tt.notInOut, r.stdout)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("invalid JSON %q: %v", a, err)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestTokenCreateOutput(t *testing.T) {
	f := newFakeAPI(t)
	r := runTrove(t, f.env(), "", "token", "create", "--scope", "publish, read", "--namespace", "acme", "--description", "ci", "--expires-in", "720h")
	if r.code != exitOK {
		t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
	}
	if r.stdout != "trove_secret\n" {
		t.Errorf("stdout = %q, want the secret alone", r.stdout)
	}
	if !strings.Contains(r.stderr, "tok_1") || !strings.Contains(r.stderr, "shown only once") || strings.Contains(r.stderr, "trove_secret") {
		t.Errorf("stderr = %q, want a note without the secret", r.stderr)
	}
	var req apispec.CreateTokenRequest
	if err := json.Unmarshal([]byte(f.last.body), &req); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Namespaces, []string{"acme"}) || req.Namespace != "" || !reflect.DeepEqual(req.Scopes, []string{"publish", "read"}) || req.Description != "ci" || req.ExpiresAt == nil {
		t.Errorf("request = %+v", req)
	}

	// --namespace repeats, and takes comma-separated lists.
	r = runTrove(t, f.env(), "", "token", "create", "--scope", "publish", "--namespace", "acme", "--namespace", "other, third,")
	if r.code != exitOK {
		t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
	}
	req = apispec.CreateTokenRequest{}
	if err := json.Unmarshal([]byte(f.last.body), &req); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Namespaces, []string{"acme", "other", "third"}) || req.Namespace != "" {
		t.Errorf("request for three namespaces = %s", f.last.body)
	}

	r = runTrove(t, f.env(), "", "token", "create", "--scope", "read", "--json")
	var doc apispec.CreatedToken
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Secret != "trove_secret" {
		t.Errorf("--json stdout = %q (%v), want the CreatedToken document", r.stdout, err)
	}
	if !strings.Contains(f.last.body, `"scopes":["read"]`) || strings.Contains(f.last.body, "expires_at") || strings.Contains(f.last.body, "namespace") {
		t.Errorf("request body = %s, want a global read token without expiry", f.last.body)
	}
}

func TestServerErrorsExitOne(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string // stderr
	}{
		{404, `{"errors":["namespace \"nope\" not found"]}`, "trove: namespace \"nope\" not found\n"},
		{409, `{"errors":["namespace \"acme\" still holds provider versions"]}`, "trove: namespace \"acme\" still holds provider versions\n"},
		{401, `{"errors":["the token is not valid"]}`, "trove: the token is not valid\n(the token came from TROVE_TOKEN)\n"},
		{500, `{"errors":["internal error"]}`, "trove: internal error\n"},
		{502, `<html>`, "trove: server answered 502 Bad Gateway without an error message\n"},
		{400, `{"errors":["bad \u001b[2Jname\r"]}`, "trove: bad ?[2Jname\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := newFakeAPI(t)
			f.status, f.errBody = tt.status, tt.body
			r := runTrove(t, f.env(), "", "namespace", "show", "nope")
			if r.code != exitError || r.stderr != tt.want || r.stdout != "" {
				t.Errorf("got %d stdout=%q stderr=%q, want 1 and %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}

func TestConnectionErrors(t *testing.T) {
	f := newFakeAPI(t)
	noCA := f.env()
	delete(noCA, "TROVE_CA_FILE")
	r := runTrove(t, noCA, "", "namespace", "list")
	if r.code != exitError || !strings.Contains(r.stderr, "--ca-file") {
		t.Errorf("untrusted certificate: got %d %q, want exit 1 with a --ca-file hint", r.code, r.stderr)
	}
	r = runTrove(t, noCA, "", "namespace", "list", "--ca-file", f.caFile)
	if r.code != exitOK {
		t.Errorf("--ca-file flag: got %d %q", r.code, r.stderr)
	}
	r = runTrove(t, map[string]string{"TROVE_CA_FILE": filepath.Join(t.TempDir(), "missing.pem"), "TROVE_ADDR": f.URL}, "", "namespace", "list")
	if r.code != exitError || !strings.Contains(r.stderr, "missing.pem") {
		t.Errorf("missing CA file: got %d %q", r.code, r.stderr)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	f := newFakeAPI(t)
	e := f.env()
	e["TROVE_ADDR"] = "https://127.0.0.1:1" // nothing listens there
	r := runTrove(t, e, "", "namespace", "list", "--addr", f.URL, "--token", "trove_flag")
	if r.code != exitOK {
		t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
	}
	if f.last.auth != "Bearer trove_flag" {
		t.Errorf("Authorization = %q, want the --token value", f.last.auth)
	}
	r = runTrove(t, f.env(), "", "namespace", "list", "--token=")
	if f.last.auth != "" {
		t.Errorf("an explicit empty --token sent Authorization %q", f.last.auth)
	}
}

func TestKeyAddRefusesWrongFiles(t *testing.T) {
	f := newFakeAPI(t)
	dir := t.TempDir()
	files := map[string]string{
		"private.asc": "-----BEGIN PGP PRIVATE KEY BLOCK-----\nxx\n",
		"binary.gpg":  "\x99\x01\x0d\x04",
		"huge.asc":    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n" + strings.Repeat("x", maxKeyFileBytes),
	}
	wants := map[string]string{"private.asc": "PRIVATE key", "binary.gpg": "not an ASCII-armored public key", "huge.asc": "larger than"}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			os.WriteFile(p, []byte(content), 0o600)
			r := runTrove(t, f.env(), "", "key", "add", "acme", "--file", p)
			if r.code != exitError || !strings.Contains(r.stderr, wants[name]) {
				t.Errorf("got %d %q, want exit 1 mentioning %q", r.code, r.stderr, wants[name])
			}
			if f.last.method != "" {
				t.Errorf("a request was sent: %s %s", f.last.method, f.last.path)
			}
		})
	}
}

// writeDist creates files with the given names in a new directory (names
// ending in "/" are directories). Each file holds "content of <name>",
// except that a SHA256SUMS lists the zips and manifest of its release with
// their digests, and its .sig is a real binary signature of it.
func writeDist(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if strings.HasSuffix(n, "/") {
			os.Mkdir(filepath.Join(dir, n), 0o700)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte("content of "+n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		base, ok := strings.CutSuffix(n, "SHA256SUMS")
		if !ok {
			continue
		}
		var lines string
		for _, m := range names {
			if strings.HasPrefix(m, base) && (strings.HasSuffix(m, ".zip") || strings.HasSuffix(m, "manifest.json")) {
				lines += fmt.Sprintf("%x  %s\n", sha256.Sum256([]byte("content of "+m)), m)
			}
		}
		if lines == "" {
			lines = fmt.Sprintf("%x  %s\n", sha256.Sum256(nil), base+"linux_amd64.zip")
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(dir, n+".sig")); err == nil && fi.Mode().IsRegular() {
			if err := os.WriteFile(filepath.Join(dir, n+".sig"), testSignature(t, []byte(lines)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

var (
	distKeyOnce sync.Once
	distKey     *signingtest.Key
)

// testSignature returns a binary detached signature of data.
func testSignature(t *testing.T, data []byte) []byte {
	distKeyOnce.Do(func() { distKey = signingtest.NewKey(t, "acme") })
	return distKey.Sign(data)
}

func TestFindRelease(t *testing.T) {
	const (
		sums     = "terraform-provider-foo_1.2.3_SHA256SUMS"
		sig      = sums + ".sig"
		manifest = "terraform-provider-foo_1.2.3_manifest.json"
		linux    = "terraform-provider-foo_1.2.3_linux_amd64.zip"
		darwin   = "terraform-provider-foo_1.2.3_darwin_arm64.zip"
	)
	tests := []struct {
		name    string
		files   []string
		want    []string // upload order
		typ     string
		version string
		err     string
	}{
		{"full release", []string{linux, sums, darwin, manifest, sig, "metadata.json", "artifacts.json", "config.yaml", "foo_linux_amd64_v1/"},
			[]string{sums, sig, manifest, darwin, linux}, "foo", "1.2.3", ""},
		{"no manifest", []string{sums, sig, linux}, []string{sums, sig, linux}, "foo", "1.2.3", ""},
		{"prerelease", []string{"terraform-provider-foo_1.0.0-rc.1_SHA256SUMS", "terraform-provider-foo_1.0.0-rc.1_SHA256SUMS.sig", "terraform-provider-foo_1.0.0-rc.1_linux_amd64.zip"},
			[]string{"terraform-provider-foo_1.0.0-rc.1_SHA256SUMS", "terraform-provider-foo_1.0.0-rc.1_SHA256SUMS.sig", "terraform-provider-foo_1.0.0-rc.1_linux_amd64.zip"}, "foo", "1.0.0-rc.1", ""},
		{"other version zips ignored", []string{sums, sig, linux, "terraform-provider-foo_1.2.2_linux_amd64.zip", "terraform-provider-bar_1.2.3_linux_amd64.zip"},
			[]string{sums, sig, linux}, "foo", "1.2.3", ""},
		{"empty dir", nil, nil, "", "", "no terraform-provider-*_SHA256SUMS file in"},
		{"two releases", []string{sums, sig, linux, "terraform-provider-foo_1.2.2_SHA256SUMS"}, nil, "", "",
			"found 2 SHA256SUMS files in"},
		// Unsigned: the namespace's managed key signs it on the server.
		{"no sig", []string{sums, linux}, []string{sums, linux}, "foo", "1.2.3", ""},
		{"sig is a directory", []string{sums, sig + "/", linux}, []string{sums, linux}, "foo", "1.2.3", ""},
		{"no zips", []string{sums, sig, manifest}, nil, "", "", "no terraform-provider-foo_1.2.3_*.zip packages"},
		{"no version", []string{"terraform-provider-foo_SHA256SUMS"}, nil, "", "", "cannot read the provider type and version"},
		{"v prefix", []string{"terraform-provider-foo_v1.2.3_SHA256SUMS"}, nil, "", "", `drop the leading "v"`},
		{"bad type", []string{"terraform-provider-terraform-foo_1.2.3_SHA256SUMS"}, nil, "", "", "may not start with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDist(t, tt.files...)
			rel, err := findRelease(dir, "")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rel.files {
				if f.path != filepath.Join(dir, f.name) {
					t.Errorf("file %s is read from %s, want it in %s", f.name, f.path, dir)
				}
				got = append(got, f.name)
			}
			if !reflect.DeepEqual(got, tt.want) || rel.typ != tt.typ || rel.version != tt.version {
				t.Errorf("findRelease = %s %s %q, want %s %s %q", rel.typ, rel.version, got, tt.typ, tt.version, tt.want)
			}
		})
	}
	if _, err := findRelease(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("findRelease of a missing directory succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := findRelease(file, ""); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("findRelease of a file: %v", err)
	}
}

// TestFindReleaseProjectManifest covers goreleaser's layout with HashiCorp's
// provider template: SHA256SUMS lists the manifest, which stays in the
// project root, the parent of dist/.
func TestFindReleaseProjectManifest(t *testing.T) {
	const (
		sums     = "terraform-provider-foo_1.2.3_SHA256SUMS"
		manifest = "terraform-provider-foo_1.2.3_manifest.json"
		zip      = "terraform-provider-foo_1.2.3_linux_amd64.zip"
		doc      = `{"version":1,"metadata":{"protocol_versions":["6.0"]}}` + "\n"
	)
	digest := func(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }
	layout := func(t *testing.T, projectManifest string) (dist string) {
		root := t.TempDir()
		dist = filepath.Join(root, "dist")
		os.Mkdir(dist, 0o700)
		lines := digest("zip") + "  " + zip + "\n" + digest(doc) + "  " + manifest + "\n"
		for name, data := range map[string]string{sums: lines, sums + ".sig": string(testSignature(t, []byte(lines))), zip: "zip"} {
			if err := os.WriteFile(filepath.Join(dist, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if projectManifest != "" {
			os.WriteFile(filepath.Join(root, "terraform-registry-manifest.json"), []byte(projectManifest), 0o600)
		}
		return dist
	}
	names := func(rel distRelease) (names, paths []string) {
		for _, f := range rel.files {
			names, paths = append(names, f.name), append(paths, f.path)
		}
		return names, paths
	}

	t.Run("found in the project root", func(t *testing.T) {
		dist := layout(t, doc)
		rel, err := findRelease(dist, "")
		if err != nil {
			t.Fatal(err)
		}
		got, paths := names(rel)
		if want := []string{sums, sums + ".sig", manifest, zip}; !reflect.DeepEqual(got, want) {
			t.Fatalf("upload names = %q, want %q", got, want)
		}
		if want := filepath.Join(filepath.Dir(dist), "terraform-registry-manifest.json"); paths[2] != want {
			t.Errorf("manifest read from %s, want %s", paths[2], want)
		}
	})
	t.Run("other bytes in the project root", func(t *testing.T) {
		_, err := findRelease(layout(t, `{"version":1,"metadata":{"protocol_versions":["5.0"]}}`), "")
		if err == nil || !strings.Contains(err.Error(), "not the manifest this release was built with") {
			t.Errorf("error = %v, want a checksum mismatch", err)
		}
	})
	t.Run("nowhere", func(t *testing.T) {
		_, err := findRelease(layout(t, ""), "")
		if err == nil || !strings.Contains(err.Error(), "or pass --manifest FILE") {
			t.Errorf("error = %v, want one that says where to put the manifest", err)
		}
	})
	t.Run("--manifest for a release that lists none", func(t *testing.T) {
		dist := writeDist(t, sums, sums+".sig", zip)
		other := filepath.Join(t.TempDir(), "m.json")
		os.WriteFile(other, []byte(doc), 0o600)
		if _, err := findRelease(dist, other); err == nil || !strings.Contains(err.Error(), "does not list") {
			t.Errorf("error = %v, want one saying SHA256SUMS does not list the manifest", err)
		}
	})
	t.Run("given with --manifest", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "m.json")
		os.WriteFile(other, []byte(doc), 0o600)
		rel, err := findRelease(layout(t, ""), other)
		if err != nil {
			t.Fatal(err)
		}
		if got, paths := names(rel); len(got) != 4 || got[2] != manifest || paths[2] != other {
			t.Errorf("files = %q from %q, want the manifest from %s", got, paths, other)
		}
	})
}

func TestPublish(t *testing.T) {
	dir := writeDist(t,
		"terraform-provider-foo_1.0.0_SHA256SUMS", "terraform-provider-foo_1.0.0_SHA256SUMS.sig",
		"terraform-provider-foo_1.0.0_linux_amd64.zip", "terraform-provider-foo_1.0.0_darwin_arm64.zip")
	f := newFakeAPI(t)
	r := runTrove(t, f.env(), "", "publish", dir, "--namespace", "acme")
	if r.code != exitOK {
		t.Fatalf("exit code = %d; stderr: %s", r.code, r.stderr)
	}
	if want := "Published acme/foo 1.0.0 for linux_amd64, darwin_arm64\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	if f.last.method+" "+f.last.path != "POST /api/v1/namespaces/acme/providers/foo/versions/1.0.0" {
		t.Errorf("request = %s %s", f.last.method, f.last.path)
	}
	sumsDoc, _ := os.ReadFile(filepath.Join(dir, "terraform-provider-foo_1.0.0_SHA256SUMS"))
	sigDoc, _ := os.ReadFile(filepath.Join(dir, "terraform-provider-foo_1.0.0_SHA256SUMS.sig"))
	want := []string{
		"file=terraform-provider-foo_1.0.0_SHA256SUMS:" + string(sumsDoc),
		"file=terraform-provider-foo_1.0.0_SHA256SUMS.sig:" + string(sigDoc),
		"file=terraform-provider-foo_1.0.0_darwin_arm64.zip:content of terraform-provider-foo_1.0.0_darwin_arm64.zip",
		"file=terraform-provider-foo_1.0.0_linux_amd64.zip:content of terraform-provider-foo_1.0.0_linux_amd64.zip",
	}
	if !reflect.DeepEqual(f.last.parts, want) {
		t.Errorf("parts =\n%q\nwant\n%q", f.last.parts, want)
	}

	f.created = false
	r = runTrove(t, f.env(), "", "publish", "--namespace", "acme", dir)
	if want := "acme/foo 1.0.0 was already published with identical content; nothing changed\n"; r.code != exitOK || r.stdout != want {
		t.Errorf("republish = %d %q, want %q", r.code, r.stdout, want)
	}

	f.status, f.errBody = 409, `{"errors":["acme/foo 1.0.0 exists with other content"]}`
	r = runTrove(t, f.env(), "", "publish", "--namespace", "acme", dir)
	if r.code != exitError || !strings.HasSuffix(r.stderr, "trove: acme/foo 1.0.0 exists with other content\n") {
		t.Errorf("conflict = %d %q", r.code, r.stderr)
	}

	r = runTrove(t, f.env(), "", "publish", "--namespace", "acme", t.TempDir())
	if r.code != exitError || !strings.Contains(r.stderr, "trove: no terraform-provider-*_SHA256SUMS file") {
		t.Errorf("empty dir = %d %q", r.code, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	r := runTrove(t, nil, "", "version")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "trove ") {
		t.Errorf("version = %d %q", r.code, r.stdout)
	}
}

// TestHelpFitsTheTerminal: the overview, each group's and each command's
// help fit 80 columns; only a word longer than a line (a long URL in an
// example) may stand over.
func TestHelpFitsTheTerminal(t *testing.T) {
	var b strings.Builder
	printOverview(&b, commands())
	for _, c := range commands() {
		printHelp(&b, c)
	}
	printGroup(&b, "token", commands()[:3])
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) <= helpColumns {
			continue
		}
		long := false
		for _, f := range strings.Fields(line) {
			long = long || len(f) > helpColumns-20
		}
		if !long {
			t.Errorf("help line of %d columns:\n%s", len(line), line)
		}
	}
	if got := wrapText("a bb ccc dddd", 6); strings.Join(got, "|") != "a bb|ccc|dddd" {
		t.Errorf("wrapText = %q", got)
	}
}
