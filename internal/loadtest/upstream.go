package loadtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
)

// ModuleUpstream is the upstream registry of the module mirror rows: the
// modules.v1 documents of a seeded Spec's modules, as a registry serves
// them (service discovery at /.well-known/terraform.json, then
// /v1/modules/<namespace>/<name>/<system>/versions). Trove's module
// mirror reads a mirrored module's versions from it at most once a
// minute per module while it serves the versions document; every
// version it lists is already held (Spec.ModuleMirror), so no download
// reaches it. It counts what it was asked. It is safe for concurrent
// use.
type ModuleUpstream struct {
	docs            map[string][]byte // URL path -> versions document
	versions, other atomic.Int64
}

// NewModuleUpstream returns the upstream of spec's modules, served under
// spec.Namespace.
func NewModuleUpstream(spec Spec) *ModuleUpstream {
	u := &ModuleUpstream{docs: map[string][]byte{}}
	type item struct {
		Version string `json:"version"`
	}
	for _, m := range spec.Modules {
		items := make([]item, m.Versions)
		for i := range m.Versions {
			items[i] = item{VersionAt(i)}
		}
		body, _ := json.Marshal(map[string]any{"modules": []any{map[string]any{
			"source": spec.Namespace + "/" + m.Name + "/" + m.System, "versions": items,
		}}})
		u.docs["/v1/modules/"+spec.Namespace+"/"+m.Name+"/"+m.System+"/versions"] = body
	}
	return u
}

// wellKnown is the upstream's service discovery document.
var wellKnown = []byte(`{"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"}`)

// ServeHTTP answers the discovery and versions documents, 404 otherwise.
func (u *ModuleUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	switch {
	case r.Method != http.MethodGet:
	case r.URL.Path == "/.well-known/terraform.json":
		body = wellKnown
	case strings.HasPrefix(r.URL.Path, "/v1/modules/"):
		if body = u.docs[r.URL.Path]; body != nil {
			u.versions.Add(1)
		}
	}
	if body == nil {
		u.other.Add(1)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// Counts returns how many versions documents the upstream answered, and
// how many other requests (discovery, unknown paths) it got.
func (u *ModuleUpstream) Counts() (versions, other int64) {
	return u.versions.Load(), u.other.Load()
}
