package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// TestModuleProvenanceAPI publishes modules through the API with a token
// into namespaces with and without a managed key: the provenance route
// answers the envelope, signed by the managed key and naming the token,
// with read scope (any token reads a public namespace); hostile names, systems
// and versions are 400 with a JSON error; a version without provenance,
// a missing version and a stranger's request are 404; no credentials on
// a private namespace are 401.
func TestModuleProvenanceAPI(t *testing.T) {
	s, tokens := setup(t)
	var managed []registry.SigningKey
	for _, ns := range []string{"acme", "open"} {
		status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/"+ns+"/keys", tokens[globalAdmin], "application/json", strings.NewReader(generateBody))
		if status != http.StatusCreated {
			t.Fatalf("generate the managed key of %s = %d %s", ns, status, raw)
		}
		var key apispec.SigningKey
		if err := json.Unmarshal(raw, &key); err != nil {
			t.Fatal(err)
		}
		k, err := signing.ParsePublicKey(key.ASCIIArmor)
		if err != nil {
			t.Fatal(err)
		}
		managed = append(managed, k)
	}
	archive := moduleArchive(t, networkModule)
	for _, ns := range []string{"acme", "open", "other"} {
		bearer := tokens[acmePublish]
		if ns != "acme" {
			bearer = tokens[globalAdmin]
		}
		status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/"+ns+"/modules/network/aws/versions/1.0.0", bearer, apispec.ModuleArchiveTarGz, bytes.NewReader(archive))
		if status != http.StatusCreated {
			t.Fatalf("publish into %s = %d %s", ns, status, raw)
		}
	}

	status, raw := apiDo(t, s, "GET", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0/provenance", tokens[acmeRead], "", nil)
	if status != http.StatusOK {
		t.Fatalf("GET provenance = %d %s", status, raw)
	}
	var answer apispec.ModuleProvenance
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("provenance answer %s: %v", raw, err)
	}
	envelope := []byte(answer.Envelope)
	if answer.Imported || len(answer.Keys) != 1 || answer.Keys[0].KeyID != managed[0].KeyID || answer.Keys[0].ASCIIArmor == "" {
		t.Errorf("the answer's keys %+v (imported %v), want acme's managed key %s", answer.Keys, answer.Imported, managed[0].KeyID)
	}
	got, err := provenance.Verify(t.Context(), envelope, managed[:1], time.Time{})
	if err != nil {
		t.Fatalf("the served provenance does not verify with acme's managed key: %v", err)
	}
	v, err := s.Index.GetModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	st := got.Statement
	ext := st.Predicate.BuildDefinition.ExternalParameters
	if st.CheckArchive("network-aws-1.0.0.tar.gz", v.ArchiveDigest) != nil || ext["module"] != "acme/network/aws" ||
		ext["token"] == "" || !strings.HasSuffix(actorOf(t, s, tokens[acmePublish]), ext["token"]) ||
		st.Predicate.BuildDefinition.BuildType != provenance.BuildTypePublish {
		t.Errorf("statement of a token publish = %+v", st)
	}
	if _, err := provenance.Verify(t.Context(), envelope, managed[1:], time.Time{}); err == nil {
		t.Error("acme's provenance verified with another namespace's key")
	}

	const base = "/api/v1/namespaces/"
	for _, c := range []struct {
		name, path, bearer string
		want               int
	}{
		{"public namespace, another namespace's token", base + "open/modules/network/aws/versions/1.0.0/provenance", tokens[otherAdmin], 200},
		{"public namespace, no token (the API needs one)", base + "open/modules/network/aws/versions/1.0.0/provenance", tokens[none], 401},
		{"private namespace, anonymous", base + "acme/modules/network/aws/versions/1.0.0/provenance", tokens[none], 401},
		{"private namespace, stranger", base + "acme/modules/network/aws/versions/1.0.0/provenance", tokens[otherAdmin], 404},
		{"no managed key at publish", base + "other/modules/network/aws/versions/1.0.0/provenance", tokens[globalAdmin], 404},
		{"missing version", base + "acme/modules/network/aws/versions/9.9.9/provenance", tokens[acmeRead], 404},
		{"missing system", base + "acme/modules/network/gcp/versions/1.0.0/provenance", tokens[acmeRead], 404},
		{"missing namespace", base + "nope/modules/network/aws/versions/1.0.0/provenance", tokens[globalAdmin], 404},
		{"version not semver", base + "acme/modules/network/aws/versions/1.0/provenance", tokens[acmeRead], 400},
		{"version with a script", base + "acme/modules/network/aws/versions/1.0.0%3Cscript%3E/provenance", tokens[acmeRead], 400},
		{"name with a dot-dot", base + "acme/modules/..%2Fnet/aws/versions/1.0.0/provenance", tokens[acmeRead], 400},
		{"name too long", base + "acme/modules/" + strings.Repeat("n", 300) + "/aws/versions/1.0.0/provenance", tokens[acmeRead], 400},
		{"system with a capital", base + "acme/modules/network/AWS!/versions/1.0.0/provenance", tokens[acmeRead], 400},
		{"namespace invalid", base + "ac%20me/modules/network/aws/versions/1.0.0/provenance", tokens[globalAdmin], 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, raw := apiDo(t, s, "GET", c.path, c.bearer, "", nil)
			if status != c.want {
				t.Fatalf("GET %s = %d %s, want %d", c.path, status, raw, c.want)
			}
			if status == 200 {
				var a apispec.ModuleProvenance
				if err := json.Unmarshal(raw, &a); err != nil {
					t.Fatal(err)
				}
				if _, err := provenance.Verify(t.Context(), a.Envelope, managed[1:], time.Time{}); err != nil {
					t.Errorf("the public namespace's provenance: %v", err)
				}
				return
			}
			var e struct{ Errors []string }
			if json.Unmarshal(raw, &e) != nil || len(e.Errors) == 0 || e.Errors[0] == "" {
				t.Fatalf("error body %q is not {\"errors\": [...]}", raw)
			}
		})
	}
}
