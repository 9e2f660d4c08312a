package loadtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestModuleUpstream(t *testing.T) {
	spec := DefaultSpec()
	spec.Modules = spec.Modules[:2]
	u := NewModuleUpstream(spec)
	srv := httptest.NewServer(u)
	defer srv.Close()
	get := func(path string) (int, []byte) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	status, body := get("/.well-known/terraform.json")
	var disco map[string]string
	if status != 200 || json.Unmarshal(body, &disco) != nil || disco["modules.v1"] != "/v1/modules/" {
		t.Errorf("discovery: %d %s", status, body)
	}
	status, body = get("/v1/modules/acme/m001/aws/versions")
	var doc upstreamVersions
	if status != 200 || json.Unmarshal(body, &doc) != nil || len(doc.Modules) != 1 || len(doc.Modules[0].Versions) != 10 ||
		doc.Modules[0].Versions[9].Version != VersionAt(9) {
		t.Errorf("versions: %d %s", status, body)
	}
	// What it does not serve: other modules and namespaces, downloads
	// (every version is held already, so Trove never asks), traversal.
	for _, p := range []string{"/v1/modules/acme/m002/aws/versions", "/v1/modules/other/m001/aws/versions",
		"/v1/modules/acme/m001/aws/0.0.1/download", "/v1/modules/acme/m001/aws/../../acme/m001/aws/versions/x"} {
		if status, _ := get(p); status != 404 {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
	// (The client may resolve the dot segments itself.)
	if v, o := u.Counts(); v != 1 || o < 4 || o > 5 {
		t.Errorf("counts: %d versions documents, %d others; want 1 and 4 or 5", v, o)
	}
}

// upstreamVersions is the modules.v1 versions document.
type upstreamVersions struct {
	Modules []struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
	} `json:"modules"`
}
