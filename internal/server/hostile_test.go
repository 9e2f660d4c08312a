package server_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// bodyKind is what a refusal's body must be.
type bodyKind int

const (
	jsonErrorsBody bodyKind = iota // {"errors": [...]} as application/json
	ociErrorsBody                  // the OCI Distribution Spec's {"errors": [{"code": ...}]}
	anyJSONBody                    // some JSON object (OAuth's {"error": ...})
	anyBody                        // a 4xx, whatever its body (HTML pages, net/http's own)
)

// probe is one hostile request and the refusal it must get.
type probe struct {
	method, target string
	header         []string // raw "Name: value" lines; {admin} is the admin token
	body           []byte
	status         int    // 0: any 4xx
	allow          string // the Allow header of a 405
	contains       string // the body must say this
	answer         bodyKind
}

// exchange sends p over a fresh TLS connection exactly as written (the
// target and headers unencoded and uncleaned) and returns the answer.
func exchange(t *testing.T, s *trovetest.Server, p probe) (*http.Response, []byte) {
	t.Helper()
	conn, err := tls.Dial("tcp", s.Host, s.TLSConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A hang is a finding: no probe needs more than this.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", p.method, p.target, s.Host)
	hasLength := false
	for _, h := range p.header {
		h = strings.ReplaceAll(h, "{admin}", s.AdminToken)
		if strings.HasPrefix(strings.ToLower(h), "content-length:") {
			hasLength = true
		}
		req.WriteString(h + "\r\n")
	}
	if !hasLength && (len(p.body) > 0 || p.method == http.MethodPost || p.method == http.MethodPut || p.method == http.MethodPatch) {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(p.body))
	}
	req.WriteString("\r\n")
	req.Write(p.body)
	// The server may answer before it read the whole body: a failed
	// write is no finding, the answer decides.
	_, _ = conn.Write(req.Bytes())
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: p.method})
	if err != nil {
		t.Fatalf("%s %.200s: no answer: %v", p.method, p.target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %.200s: truncated answer: %v", p.method, p.target, err)
	}
	return resp, body
}

// check fails the test unless the answer to p is the refusal p wants.
func (p probe) check(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode >= 500 || resp.StatusCode < 400 || (p.status != 0 && resp.StatusCode != p.status) {
		want := "a 4xx"
		if p.status != 0 {
			want = fmt.Sprint(p.status)
		}
		t.Fatalf("status %d, want %s; body %.300q", resp.StatusCode, want, body)
	}
	if p.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != p.allow {
		t.Fatalf("Allow %q, want %q", resp.Header.Get("Allow"), p.allow)
	}
	if p.contains != "" && !strings.Contains(string(body), p.contains) {
		t.Fatalf("the answer does not say %q: %.300q", p.contains, body)
	}
	if len(body) > maxRefusal {
		t.Fatalf("a refusal of %d bytes: a message never repeats a value over its limit (docs/security.md); body %.300q...", len(body), body)
	}
	if p.method == http.MethodHead || p.answer == anyBody {
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %.300q", resp.Header.Get("Content-Type"), body)
	}
	switch p.answer {
	case jsonErrorsBody:
		var doc struct {
			Errors []string `json:"errors"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) == 0 || doc.Errors[0] == "" {
			t.Fatalf("not a JSON error body: %.300q", body)
		}
	case ociErrorsBody:
		if front(resp, body) {
			return // Trove's front refused it before the OCI API (docs/oci.md)
		}
		var doc struct {
			Errors []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) == 0 || doc.Errors[0].Code == "" {
			t.Fatalf("not an OCI error body: %.300q", body)
		}
	case anyJSONBody:
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil || len(doc) == 0 {
			t.Fatalf("not a JSON object: %.300q", body)
		}
	}
}

// maxRefusal bounds the body of a refusal: what it quotes of the
// request is elided (registry.Elide), however long the input was.
const maxRefusal = 2 << 10

// front reports whether an answer is a refusal of Trove's front, which
// comes before any route: a non-canonical path, two Authorization headers.
func front(resp *http.Response, body []byte) bool {
	var doc struct {
		Errors []string `json:"errors"`
	}
	return resp.StatusCode == http.StatusBadRequest && json.Unmarshal(body, &doc) == nil && len(doc.Errors) == 1 &&
		(strings.Contains(doc.Errors[0], "not canonical") || strings.Contains(doc.Errors[0], "more than one Authorization"))
}

const mainTF = "variable \"name\" {\n  type = string\n}\n"

// entry is one member of a test archive.
type entry = testarchive.Entry

// mainFile is the root configuration file of every hostile module
// archive, so that nothing but its hostile entry is wrong.
var mainFile = entry{Name: "main.tf", Body: mainTF}

// hostileProbes returns the probes of every entrance, by entrance.
func hostileProbes(t *testing.T, expiredToken, fileURL string) map[string][]probe {
	const (
		admin    = "Authorization: Bearer {admin}"
		asJSON   = "Content-Type: application/json"
		asGzip   = "Content-Type: application/gzip"
		asZip    = "Content-Type: application/zip"
		digest   = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		getHead  = "GET, HEAD"
		longName = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	)
	long := strings.Repeat("a", 5000)
	confusable := "%D0%B0cme" // Cyrillic "а" then "cme"
	badNames := []string{"%00", "a%00b", "a%0Ab", longName, long, confusable, "-acme", "acme-", "a_b%20c", "%C3%A9", "%FF%FE", "%25", "%252e%252e"}
	badVersions := []string{"01.0.0", "1.00.0", "1.0.0-01", "v1.0.0", "1.0", "1", "1.0.0.0", "99999999999999999999.0.0",
		"1.0.0-", "1.0.0+", "1.0.0+build+x", "1.0.0-" + strings.Repeat("a", 400), "1.0.0-" + long, "%EF%BC%91.0.0", "1.0.0%00", "..", "%2e%2e", "latest"}
	malformedAuth := []string{
		"Authorization: Bearer",
		"Authorization: Bearer ",
		"Authorization: Bearer garbage",
		"Authorization: Bearer trove_" + strings.Repeat("x", 40),
		"Authorization: Bearer trove_" + strings.Repeat("x", 5000),
		"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x:trove_nope")),
		"Authorization: Basic !!!",
		"Authorization: Token {admin}",
		"Authorization: Bearer  {admin}",
		"Authorization: Bearer trovesession_abc",
		"Authorization: Bearer " + expiredToken,
	}

	out := map[string][]probe{}
	add := func(entrance string, ps ...probe) { out[entrance] = append(out[entrance], ps...) }

	// Discovery.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		add("discovery", probe{method: m, target: "/.well-known/terraform.json", status: http.StatusMethodNotAllowed, allow: getHead})
	}

	// providers.v1.
	for _, n := range badNames {
		add("providers.v1",
			probe{method: "GET", target: "/v1/providers/" + n + "/widget/versions"},
			probe{method: "GET", target: "/v1/providers/acme/" + n + "/versions"},
			probe{method: "GET", target: "/v1/providers/acme/widget/1.0.0/download/" + n + "/amd64"},
			probe{method: "GET", target: "/v1/providers/acme/widget/1.0.0/download/linux/" + n},
		)
	}
	for _, v := range badVersions {
		add("providers.v1", probe{method: "GET", target: "/v1/providers/acme/widget/" + v + "/download/linux/amd64"})
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		add("providers.v1",
			probe{method: m, target: "/v1/providers/acme/widget/versions", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
			probe{method: m, target: "/v1/providers/acme/widget/1.0.0/download/linux/amd64", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
		)
	}
	for _, a := range malformedAuth {
		add("providers.v1", probe{method: "GET", target: "/v1/providers/acme/widget/versions", header: []string{a}, status: http.StatusUnauthorized})
	}
	add("providers.v1",
		probe{method: "GET", target: "/v1/providers/acme/widget/versions", header: []string{admin, "Authorization: Bearer garbage"}, status: http.StatusBadRequest, contains: "more than one Authorization"},
		probe{method: "GET", target: "/v1/providers/acme/widget/versions?x=" + long + long},
		probe{method: "GET", target: "/v1/providers/" + strings.Repeat("a/", 20000) + "versions"},
		probe{method: "GET", target: "/" + strings.Repeat("a/", 20000)},
		// net/http refuses a control character in a header itself (a
		// plain-text 400 before any handler).
		probe{method: "GET", target: "/v1/providers/acme/widget/versions", header: []string{"Authorization: Bearer \x01trove_x"}, status: http.StatusBadRequest, answer: anyBody},
		probe{method: "GET", target: "/v1/providers/acme/widget/versions", header: []string{"X-Big: " + strings.Repeat("b", 70<<10)}, answer: anyBody},
	)

	// modules.v1.
	for _, n := range badNames {
		add("modules.v1",
			probe{method: "GET", target: "/v1/modules/" + n + "/net/aws/versions"},
			probe{method: "GET", target: "/v1/modules/acme/" + n + "/aws/versions"},
			probe{method: "GET", target: "/v1/modules/acme/net/" + n + "/versions"},
			probe{method: "GET", target: "/v1/modules/acme/net/" + n + "/1.0.0/download"},
			probe{method: "GET", target: "/v1/modules/" + n},
			probe{method: "GET", target: "/v1/modules?namespace=" + n + "&provider=" + n},
		)
	}
	for _, v := range badVersions {
		add("modules.v1",
			probe{method: "GET", target: "/v1/modules/acme/net/aws/" + v + "/download"},
			probe{method: "GET", target: "/v1/modules/acme/net/aws/" + v},
		)
	}
	for _, q := range []string{"offset=-1", "offset=99999999999999999999", "offset=1e3", "limit=0", "limit=-5", "limit=100000", "limit=abc",
		"limit=1&limit=100000", "offset=0&offset=-1", "provider=" + long, "namespace=acme&namespace=other"} {
		add("modules.v1", probe{method: "GET", target: "/v1/modules/search?q=x&" + q}, probe{method: "GET", target: "/v1/modules?" + q})
	}
	for _, q := range []string{"q=" + long, "q=", "q=%20", "q=x&q=" + long} {
		add("modules.v1", probe{method: "GET", target: "/v1/modules/search?" + q})
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		add("modules.v1",
			probe{method: m, target: "/v1/modules/acme/net/aws/versions", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
			probe{method: m, target: "/v1/modules/acme/net/aws/1.0.0/download", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
			probe{method: m, target: "/v1/modules/search?q=x", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
		)
	}
	for _, a := range malformedAuth {
		add("modules.v1", probe{method: "GET", target: "/v1/modules/acme/net/aws/versions", header: []string{a}, status: http.StatusUnauthorized})
	}

	// The network mirror protocol.
	for _, h := range []string{"127.0.0.1", "localhost", "evil.example%3A22", "%5B%3A%3A1%5D", "a..b", long, "xn--", "EXAMPLE.COM%00"} {
		add("mirror", probe{method: "GET", target: "/v1/mirror/" + h + "/hashicorp/aws/index.json"})
	}
	for _, n := range badNames {
		add("mirror",
			probe{method: "GET", target: "/v1/mirror/registry.example.com/" + n + "/aws/index.json"},
			probe{method: "GET", target: "/v1/mirror/trove.localhost/acme/" + n + "/index.json"},
		)
	}
	for _, f := range []string{"index.jsonx", "x.json", "01.0.0.json", "1.0.0.json.json", "1.0.0", ".json", "%2e%2e.json", long + ".json", "99999999999999999999.0.0.json"} {
		add("mirror", probe{method: "GET", target: "/v1/mirror/registry.example.com/hashicorp/aws/" + f})
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		add("mirror", probe{method: m, target: "/v1/mirror/registry.example.com/hashicorp/aws/index.json", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead})
	}

	// The OCI API under /v2/.
	oci := func(ps ...probe) {
		for _, p := range ps {
			p.answer = ociErrorsBody
			add("oci", p)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		oci(probe{method: m, target: "/v2/", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
			probe{method: m, target: "/v2/acme/widget/blobs/uploads/", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
			probe{method: m, target: "/v2/acme/widget/manifests/1.0.0", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead})
	}
	for _, m := range []string{http.MethodPut, http.MethodDelete} {
		oci(probe{method: m, target: "/v2/token", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: "GET, HEAD, POST"})
	}
	for _, n := range badNames {
		oci(probe{method: "GET", target: "/v2/" + n + "/widget/tags/list", header: []string{admin}},
			probe{method: "GET", target: "/v2/acme/modules/" + n + "/aws/tags/list", header: []string{admin}},
			probe{method: "GET", target: "/v2/registry.example.com/" + n + "/aws/tags/list", header: []string{admin}})
	}
	oci(probe{method: "GET", target: "/v2/" + strings.Repeat("a/", 20000) + "tags/list", header: []string{admin}},
		probe{method: "GET", target: "/v2/" + strings.Repeat("a/", 20000) + "manifests/1.0.0", header: []string{admin}})
	for _, ref := range []string{"sha256:zz", "sha256:" + strings.Repeat("0", 63), "sha512:abc", "md5:00", digest + "x", strings.Repeat("a", 200), "01.0.0", "1.0.0%2b1", "%00", "latest"} {
		oci(probe{method: "GET", target: "/v2/acme/widget/manifests/" + ref, header: []string{admin}},
			probe{method: "GET", target: "/v2/acme/widget/blobs/" + ref, header: []string{admin}},
			probe{method: "GET", target: "/v2/acme/widget/referrers/" + ref, header: []string{admin}})
	}
	for _, q := range []string{"n=-1", "n=abc", "n=99999999999999999999", "n=1&n=2", "n=1&last=0.0.1&last=9.0.0"} {
		oci(probe{method: "GET", target: "/v2/acme/modules/net/aws/tags/list?" + q, header: []string{admin}})
	}
	for _, a := range malformedAuth {
		oci(probe{method: "GET", target: "/v2/", header: []string{a}, status: http.StatusUnauthorized},
			probe{method: "GET", target: "/v2/token?scope=repository:acme/widget:pull", header: []string{a}, status: http.StatusUnauthorized})
	}
	oci(probe{method: "GET", target: "/v2/token?scope=" + strings.Repeat("repository:acme/widget:pull,", 2000), header: []string{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x:nope"))}},
		probe{method: "GET", target: "/v2/token", header: []string{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon"))}, status: http.StatusUnauthorized},
		probe{method: "GET", target: "/v2/", header: []string{"Authorization: Bearer {admin}", "Authorization: Basic !!!"}, status: http.StatusBadRequest})
	// Trove's front refuses it before the OCI API sees it (as a
	// non-canonical path): Trove's error body.
	add("oci", probe{method: "GET", target: "/v2/acme/widget/tags/list", header: []string{"Authorization: Basic !!!", admin}, status: http.StatusBadRequest, contains: "more than one Authorization"})

	// Signed file URLs.
	path, query, _ := strings.Cut(fileURL, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	exp, sig := q.Get("expires"), q.Get("signature")
	flipped := []byte(sig)
	flipped[0] ^= 1
	for _, target := range []string{path, path + "?expires=" + exp, path + "?signature=" + sig, path + "?expires=1&signature=" + sig,
		path + "?expires=" + exp + "&signature=" + string(flipped), path + "?expires=99999999999999999999&signature=" + sig,
		path + "?expires=-1&signature=" + sig, path + "?expires=" + exp + "&signature=" + strings.Repeat("A", 5000),
		strings.Replace(path, "/v1/files/", "/v1/files/0", 1) + "?" + query, path + "x?" + query,
		path[:len(path)-2] + "%00?" + query} {
		add("files", probe{method: "GET", target: target})
	}
	for _, rg := range []string{"bytes=99999999999999999999-", "bytes=5-1", "bytes=abc", "bytes=999999-"} {
		add("files", probe{method: "GET", target: fileURL, header: []string{"Range: " + rg}, status: http.StatusRequestedRangeNotSatisfiable})
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		add("files", probe{method: m, target: fileURL, status: http.StatusMethodNotAllowed, allow: getHead})
	}

	// The management API.
	api := func(ps ...probe) { add("api", ps...) }
	for _, a := range append(slices.Clone(malformedAuth), "") {
		h := []string{}
		if a != "" {
			h = append(h, a)
		}
		api(probe{method: "GET", target: "/api/v1/namespaces", header: h, status: http.StatusUnauthorized},
			probe{method: "POST", target: "/api/v1/namespaces", header: append(h, asJSON), body: []byte(`{"name":"intruder"}`), status: http.StatusUnauthorized})
	}
	api(probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, "Authorization: Bearer garbage", asJSON}, body: []byte(`{"name":"intruder"}`), status: http.StatusBadRequest, contains: "more than one Authorization"})
	for _, b := range []string{``, `{`, `{"name":"intruder"`, `[]`, `null`, `"x"`, `{"name":"intruder","extra":1}`, `{"name":"intruder"}{"name":"intruder2"}`,
		`{"name":"intr\u0000uder"}`, `{"name":"` + longName + `"}`, `{"name":"../x"}`, `{"name":"%2e%2e"}`, `{"name":"` + "\u0430cme" + `"}`,
		`{"name":"a b"}`, `{"name":"acme"}`, `{"name":"ACME"}`, `{"name":"intruder","visibility":"world"}`, `{"name":"intruder","description":"` + long + long + `"}`,
		`{"name":1}`, "\xff\xfe{}", `{"name":"intruder","name":"acme"}`, `{"name":"acme","name":"intruder"}`, `{"name":"acme","NAME":"intruder"}`,
		`{"name":"intruder"}}`, `{"name":"intruder"}]`} {
		api(probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, asJSON}, body: []byte(b)})
	}
	api(probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, asJSON}, body: []byte(`{"name":"intruder","description":"` + strings.Repeat("x", 2<<20) + `"}`), status: http.StatusRequestEntityTooLarge},
		// A declared length over the limit is refused before the body is read.
		probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, asJSON, "Content-Length: 99999999999"}, body: []byte(`{"name":"intruder"}`), status: http.StatusRequestEntityTooLarge},
		probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, asJSON, "Content-Length: -1"}, body: []byte(`{"name":"intruder"}`), answer: anyBody},
		probe{method: "POST", target: "/api/v1/namespaces", header: []string{admin, asJSON, "Transfer-Encoding: chunked"}, body: []byte("5\r\n{\"nam\r\nzz\r\n"), answer: anyBody},
	)
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		api(probe{method: m, target: "/api/v1/namespaces", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: "GET, HEAD, POST"})
	}
	api(probe{method: "PUT", target: "/api/v1/namespaces/acme", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: "DELETE, GET, HEAD, PATCH"},
		probe{method: "POST", target: "/api/v1/whoami", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: getHead},
		probe{method: "GET", target: "/api/v1/lock", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: "POST"},
		probe{method: "DELETE", target: "/api/v1/tokens", header: []string{admin}, status: http.StatusMethodNotAllowed, allow: "GET, HEAD, POST"},
	)
	for _, n := range badNames {
		api(probe{method: "GET", target: "/api/v1/namespaces/" + n, header: []string{admin}},
			probe{method: "PATCH", target: "/api/v1/namespaces/" + n, header: []string{admin, asJSON}, body: []byte(`{"visibility":"private"}`)},
			probe{method: "DELETE", target: "/api/v1/namespaces/" + n, header: []string{admin}},
			probe{method: "GET", target: "/api/v1/namespaces/acme/providers/" + n, header: []string{admin}},
			probe{method: "GET", target: "/api/v1/tokens/" + n, header: []string{admin}},
		)
	}
	for _, b := range []string{`{"scopes":["read"],"namespaces":["acme"],"expires_at":"yesterday"}`, `{"scopes":["root"],"namespaces":["acme"]}`,
		`{"scopes":[],"namespaces":["acme"]}`, `{"scopes":["read"],"namespaces":["acme"],"namespace":"acme"}`, `{"scopes":["read"],"namespaces":["nope"]}`,
		`{"scopes":["read"],"namespaces":["acme"],"expires_at":"1999-01-01T00:00:00Z"}`, `{"scopes":["read"],"namespaces":["acme"],"expires_at":"99999-01-01T00:00:00Z"}`,
		`{"scopes":["read"],"user":"nobody"}`, `{"scopes":["read"],"ſcopes":["admin"],"namespaces":["acme"]}`, `{"scopes":["read"],"namespaces":["acme"],"Namespaces":[]}`, `{"scopes":["read","read"],"namespaces":["acme","acme"],"description":"` + long + `"}`} {
		api(probe{method: "POST", target: "/api/v1/tokens", header: []string{admin, asJSON}, body: []byte(b)})
	}
	api(probe{method: "DELETE", target: "/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0?confirm=acme/net/aws/1.0.0&confirm=x", header: []string{admin}, status: http.StatusBadRequest, contains: "given 2 times"},
		probe{method: "GET", target: "/api/v1/tokens?namespace=acme&namespace=other", header: []string{admin}, status: http.StatusBadRequest, contains: "given 2 times"})
	for _, q := range []string{"limit=-1", "limit=abc", "limit=0", "limit=99999999999999999999", "limit=1&limit=100000"} {
		api(probe{method: "GET", target: "/api/v1/namespaces/acme/modules?" + q, header: []string{admin}},
			probe{method: "GET", target: "/api/v1/audit?" + q, header: []string{admin}})
	}
	api(probe{method: "GET", target: "/api/v1/namespaces/acme/modules?offset=-1", header: []string{admin}},
		probe{method: "GET", target: "/api/v1/audit?since=yesterday", header: []string{admin}})

	// Mirror upstreams (global admin configuration).
	up := "/api/v1/mirror/upstreams/"
	for _, h := range []string{"a..b", "-a.example", "%00", "a%0Ab.example", longName + ".example", "a.example%3A99999", "%2e%2e"} {
		api(probe{method: "PUT", target: up + h, header: []string{admin, asJSON}, body: []byte(`{"allow":[]}`)})
	}
	for _, b := range []string{`{"service_url":"file:///etc/passwd","allow":[]}`, `{"service_url":"javascript:alert(1)","allow":[]}`, `{"service_url":"not a url","allow":[]}`,
		`{"service_url":"http://registry.example.com/v1/providers/","allow":[]}`, `{"ca_certificates":"garbage","allow":[]}`,
		`{"allow":[{"provider":"../.."}]}`, `{"allow":[{"provider":"a/b","versions":"~> banana"}]}`, `{"allow":[{"provider":"a/b","min_age":"-7d"}]}`,
		`{"allow":[{"provider":"a/b","min_age":"99999999999999999999d"}]}`, `{"allow":[{"provider":"a/b","versions":"` + long + `"}]}`} {
		api(probe{method: "PUT", target: up + "registry.example.com", header: []string{admin, asJSON}, body: []byte(b)})
	}

	// Uploads: module and provider publishes.
	good := testarchive.TarGzOf(t, mainFile)
	modURL := "/api/v1/namespaces/acme/modules/net/aws/versions/"
	for _, v := range append(slices.Clone(badVersions), "1.0.0+build") { // 1.0.0 is stored: the same precedence
		add("uploads", probe{method: "POST", target: modURL + v, header: []string{admin, asGzip}, body: good})
	}
	for _, n := range badNames {
		add("uploads",
			probe{method: "POST", target: "/api/v1/namespaces/acme/modules/" + n + "/aws/versions/2.0.0", header: []string{admin, asGzip}, body: good},
			probe{method: "POST", target: "/api/v1/namespaces/acme/modules/net/" + n + "/versions/2.0.0", header: []string{admin, asGzip}, body: good},
			probe{method: "POST", target: "/api/v1/namespaces/acme/providers/" + n + "/versions/2.0.0", header: []string{admin, "Content-Type: multipart/form-data; boundary=x"}, body: []byte("--x--\r\n")},
		)
	}
	bomb := strings.Repeat("\x00", 4<<20)
	archives := map[string][]byte{
		"zip-slip tar":          testarchive.TarGzOf(t, mainFile, entry{Name: "../evil.tf", Body: mainTF}),
		"deep zip-slip tar":     testarchive.TarGzOf(t, mainFile, entry{Name: "a/../../evil.tf", Body: mainTF}),
		"absolute tar":          testarchive.TarGzOf(t, mainFile, entry{Name: "/etc/evil.tf", Body: mainTF}),
		"backslash tar":         testarchive.TarGzOf(t, mainFile, entry{Name: "..\\evil.tf", Body: mainTF}),
		"symlink tar":           testarchive.TarGzOf(t, mainFile, entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		"symlink out tar":       testarchive.TarGzOf(t, mainFile, entry{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "../../.."}),
		"control name tar":      testarchive.TarGzOf(t, mainFile, entry{Name: "a\x01b.tf", Body: mainTF}),
		"bomb tar":              testarchive.TarGzOf(t, mainFile, entry{Name: "big.tf", Body: bomb}),
		"truncated tar":         good[:len(good)/2],
		"empty tar":             testarchive.TarGzOf(t),
		"not an archive":        []byte("hello"),
		"empty":                 nil,
		"zip-slip zip":          testarchive.ZipOf(t, mainFile, entry{Name: "../evil.tf", Body: mainTF}),
		"absolute zip":          testarchive.ZipOf(t, mainFile, entry{Name: "/evil.tf", Body: mainTF}),
		"bomb zip":              testarchive.ZipOf(t, mainFile, entry{Name: "big.tf", Body: bomb}),
		"duplicate names zip":   testarchive.ZipOf(t, mainFile, entry{Name: "main.tf", Body: "x"}),
		"invalid utf-8 zip":     testarchive.ZipOf(t, mainFile, entry{Name: "\xff.tf", Body: mainTF}),
		"zip as gzip":           testarchive.ZipOf(t, mainFile),
		"tar.gz as zip":         good,
		"case-folded names tar": testarchive.TarGzOf(t, mainFile, entry{Name: "MAIN.tf", Body: mainTF}),
	}
	for name, a := range archives {
		ct := asGzip
		if strings.HasSuffix(name, " zip") {
			ct = asZip
		}
		add("uploads", probe{method: "POST", target: modURL + "3.0.0?case=" + strings.ReplaceAll(name, " ", "-"), header: []string{admin, ct}, body: a})
	}
	for _, ct := range []string{"", "Content-Type: text/plain", "Content-Type: multipart/form-data", "Content-Type: multipart/form-data; boundary=zz", "Content-Type: ;;;", "Content-Type: application/json"} {
		h := []string{admin}
		if ct != "" {
			h = append(h, ct)
		}
		add("uploads",
			probe{method: "POST", target: modURL + "3.0.0", header: h, body: good},
			probe{method: "POST", target: "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", header: h, body: good})
	}
	add("uploads",
		probe{method: "POST", target: modURL + "3.0.0", header: []string{asGzip}, body: good, status: http.StatusUnauthorized},
		probe{method: "POST", target: modURL + "3.0.0", header: []string{admin, asGzip, "Content-Length: 99999999999999"}, body: good, status: http.StatusRequestEntityTooLarge},
		probe{method: "POST", target: "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", header: []string{admin, "Content-Type: multipart/form-data; boundary=x", "Content-Length: 99999999999999"}, body: []byte("--x--\r\n"), status: http.StatusRequestEntityTooLarge},
		probe{method: "POST", target: "/api/v1/bundle", header: []string{admin, "Content-Type: application/x-tar", "Content-Length: 99999999999999"}, body: []byte("x"), status: http.StatusRequestEntityTooLarge},
		probe{method: "POST", target: modURL + "3.0.0", header: []string{"Authorization: Bearer " + expiredToken, asGzip}, body: good, status: http.StatusUnauthorized},
		probe{method: "POST", target: "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", header: []string{admin, "Content-Type: multipart/form-data; boundary=x"},
			body: []byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../terraform-provider-widget_1.0.0_SHA256SUMS\"\r\n\r\nabc\r\n--x--\r\n")},
		probe{method: "POST", target: "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", header: []string{admin, "Content-Type: multipart/form-data; boundary=x"},
			body: []byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"terraform-provider-widget_1.0.0_SHA256SUMS.sig\"\r\n\r\nnot a signature\r\n--x--\r\n")},
		probe{method: "POST", target: "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", header: []string{admin, "Content-Type: multipart/form-data; boundary=x"},
			body:   []byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"terraform-provider-widget_1.0.0_SHA256SUMS\"\r\n\r\ntrunc"),
			status: http.StatusBadRequest, contains: "the upload of terraform-provider-widget_1.0.0_SHA256SUMS ended early"},
	)

	// login.v1 and the device grant.
	login := func(ps ...probe) { add("login", ps...) }
	login(probe{method: "GET", target: "/oauth/token", status: http.StatusMethodNotAllowed, allow: "POST"},
		probe{method: "PUT", target: "/oauth/authorize", status: http.StatusMethodNotAllowed, allow: "GET, HEAD, POST"},
		probe{method: "GET", target: "/oauth/device", status: http.StatusMethodNotAllowed, allow: "POST"})
	form := "Content-Type: application/x-www-form-urlencoded"
	for _, b := range []string{"", "grant_type=authorization_code", "grant_type=authorization_code&code=x&code_verifier=y&client_id=terraform-cli&redirect_uri=http://localhost:10000/login",
		"grant_type=password&username=admin&password=x", "grant_type=%zz", strings.Repeat("a=b&", 100000),
		"grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=" + long} {
		login(probe{method: "POST", target: "/oauth/token", header: []string{form}, body: []byte(b), answer: anyJSONBody})
	}
	for _, b := range []string{"grant_type=authorization_code&grant_type=refresh_token&code=x&client_id=terraform-cli",
		"grant_type=authorization_code&client_id=terraform-cli&redirect_uri=http://localhost:10000/login&code_verifier=" + strings.Repeat("v", 43) + "&code=a&code=b",
		"grant_type=urn:ietf:params:oauth:grant-type:device_code&client_id=terraform-cli&device_code=a&device_code=b"} {
		login(probe{method: "POST", target: "/oauth/token", header: []string{form}, body: []byte(b), status: http.StatusBadRequest, answer: anyJSONBody, contains: "repeated"})
	}
	login(probe{method: "POST", target: "/oauth/device", header: []string{form}, body: []byte("client_id=terraform-cli&client_id=x"), status: http.StatusBadRequest, answer: anyJSONBody, contains: "repeated"})
	login(probe{method: "POST", target: "/oauth/token", header: []string{"Content-Type: application/json"}, body: []byte(`{"grant_type":"x"}`), answer: anyJSONBody},
		probe{method: "POST", target: "/oauth/device", header: []string{form}, body: []byte("client_id=" + long), answer: anyJSONBody},
		probe{method: "POST", target: "/oauth/device", header: []string{form}, body: []byte("client_id=%00"), answer: anyJSONBody})
	for _, q := range []string{"", "response_type=token", "response_type=code&client_id=terraform-cli&redirect_uri=https://evil.example/&code_challenge=x&code_challenge_method=S256",
		"response_type=code&client_id=terraform-cli&redirect_uri=http://localhost:10000/login&code_challenge=x&code_challenge_method=plain",
		"response_type=code&client_id=terraform-cli&client_id=other&redirect_uri=http://localhost:10000/login&code_challenge=x&code_challenge_method=S256",
		"response_type=code&client_id=" + long, "redirect_uri=javascript:alert(1)", "state=%00"} {
		login(probe{method: "GET", target: "/oauth/authorize?" + q, answer: anyBody})
	}
	login(probe{method: "POST", target: "/oauth/authorize", header: []string{form}, body: []byte("username=admin&password=x"), answer: anyBody},
		probe{method: "POST", target: "/oauth/authorize", header: []string{form}, body: []byte(strings.Repeat("x", 2<<20)), answer: anyBody})

	for _, idp := range []string{"nope", "a%00b", longName, "%2e%2e"} {
		login(probe{method: "GET", target: "/oauth/sso/" + idp + "/start", answer: anyBody},
			probe{method: "GET", target: "/oauth/sso/" + idp + "/callback?state=x&code=y", answer: anyBody},
			probe{method: "GET", target: "/oauth/sso/" + idp + "/callback?state=x&state=y&code=y", answer: anyBody})
	}

	// The web UI and its forms.
	browser := "Accept: text/html"
	web := func(ps ...probe) {
		for _, p := range ps {
			p.answer = anyBody
			add("web", p)
		}
	}
	for _, n := range badNames {
		web(probe{method: "GET", target: "/namespaces/" + n, header: []string{browser}},
			probe{method: "GET", target: "/providers/acme/" + n, header: []string{browser}},
			probe{method: "GET", target: "/modules/acme/net/" + n + "/1.0.0", header: []string{browser}},
			probe{method: "GET", target: "/providers/acme/widget/1.0.0/docs/" + n + "/x", header: []string{browser}})
	}
	web(probe{method: "POST", target: "/sign-in", header: []string{browser, form}, body: []byte("username=admin&password=x")},
		probe{method: "POST", target: "/sign-in", header: []string{browser, form, "Origin: https://evil.example"}, body: []byte("username=admin&password=x&csrf=x")},
		probe{method: "POST", target: "/sign-in", header: []string{browser, form}, body: []byte(strings.Repeat("x", 2<<20))},
		probe{method: "POST", target: "/settings/tokens", header: []string{browser, form}, body: []byte("scopes=admin")},
		probe{method: "POST", target: "/settings/tokens", header: []string{browser, form, "Cookie: __Host-trove-session={admin}"}, body: []byte("scopes=admin")},
		probe{method: "POST", target: "/settings/tokens", header: []string{browser, form, "Cookie: __Host-trove-session=trovesession_x"}, body: []byte("scopes=admin")},
		probe{method: "POST", target: "/namespaces/acme/settings/members", header: []string{browser, form, admin}, body: []byte("user=x&role=admin")},
		probe{method: "PUT", target: "/sign-in", status: http.StatusMethodNotAllowed, allow: "GET, HEAD, POST"},
		probe{method: "POST", target: "/search?q=x", status: http.StatusMethodNotAllowed, allow: getHead},
		probe{method: "DELETE", target: "/", status: http.StatusMethodNotAllowed, allow: getHead},
	)
	return out
}

// TestHostileRequests sends hostile requests to every entrance of a real
// Trove (SQLite and files, HTTPS) and expects a clear refusal of each:
// a 4xx with the entrance's error body (JSON {"errors": [...]}, the OCI
// error document on /v2/, OAuth's on /oauth/token), never a 5xx, a hang
// or a redirect, and nothing stored.
func TestHostileRequests(t *testing.T) {
	s := trovetest.Start(t, trovetest.Options{MaxUnpackedBytes: 1 << 20})
	c := s.HTTPClient()
	call := func(method, path, contentType string, body []byte, want int) []byte {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, out)
		}
		return out
	}
	call("POST", "/api/v1/namespaces", "application/json", []byte(`{"name":"acme","visibility":"public"}`), http.StatusCreated)
	call("POST", "/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0", "application/gzip", testarchive.TarGzOf(t, mainFile), http.StatusCreated)
	var created struct {
		Token  struct{ ID string } `json:"token"`
		Secret string              `json:"secret"`
	}
	if err := json.Unmarshal(call("POST", "/api/v1/tokens", "application/json", []byte(`{"namespaces":["acme"],"scopes":["read"]}`), http.StatusCreated), &created); err != nil {
		t.Fatal(err)
	}
	call("PATCH", "/api/v1/tokens/"+created.Token.ID, "application/json", []byte(`{"expires_at":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`"}`), http.StatusOK)
	state := func() string {
		return string(call("GET", "/api/v1/namespaces", "", nil, 200)) + "\n" +
			string(call("GET", "/api/v1/namespaces/acme/modules", "", nil, 200)) + "\n" +
			string(call("GET", "/api/v1/namespaces/acme/providers", "", nil, 200)) + "\n" +
			string(call("GET", "/api/v1/tokens", "", nil, 200)) + "\n" +
			string(call("GET", "/api/v1/mirror/upstreams", "", nil, 200))
	}
	before := state()

	req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/modules/acme/net/aws/1.0.0/download", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fileURL, err := url.Parse(resp.Header.Get("X-Terraform-Get"))
	if err != nil || resp.StatusCode != http.StatusNoContent || !strings.HasPrefix(fileURL.Path, "/v1/files/") {
		t.Fatalf("module download: %d %q %v", resp.StatusCode, resp.Header.Get("X-Terraform-Get"), err)
	}

	probes := hostileProbes(t, created.Secret, fileURL.RequestURI())
	entrances := slices.Sorted(maps.Keys(probes))
	total := 0
	for _, e := range entrances {
		t.Run(e, func(t *testing.T) {
			for i, p := range probes[e] {
				t.Run(fmt.Sprintf("%d %s %.80s", i, p.method, p.target), func(t *testing.T) {
					resp, body := exchange(t, s, p)
					p.check(t, resp, body)
				})
			}
		})
		total += len(probes[e])
		t.Logf("%s: %d probes", e, len(probes[e]))
	}
	t.Logf("%d probes in all", total)
	if after := state(); after != before {
		t.Fatalf("a refused request changed what is stored:\nbefore %s\nafter  %s", before, after)
	}
}
