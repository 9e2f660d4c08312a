package provenance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

const (
	digestA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

type testKey struct {
	*signingtest.Key
	public registry.SigningKey
}

func newKey(t *testing.T, name string) testKey {
	t.Helper()
	k := signingtest.NewKeyWith(t, name, signingtest.Options{Algorithm: signingtest.Ed25519})
	pub, err := signing.ParsePublicKey(k.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{Key: k, public: pub}
}

func (k testKey) signFunc() SignFunc {
	return func(_ context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return k.public, k.Sign(data), nil
	}
}

func release() Release {
	return Release{Namespace: "acme", Type: "widget", Version: "1.2.3",
		Archives: map[string]string{
			"terraform-provider-widget_1.2.3_linux_amd64.zip":  digestA,
			"terraform-provider-widget_1.2.3_darwin_arm64.zip": digestB,
		},
		PublishedAt: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
}

func githubClaims() map[string]any {
	return map[string]any{
		"iss": "https://ci.example.test", "repository": "acme/terraform-provider-widget", "ref": "refs/tags/v1.2.3",
		"workflow_ref": "acme/terraform-provider-widget/.github/workflows/release.yml@refs/tags/v1.2.3",
		"sha":          "0123456789abcdef0123456789abcdef01234567", "run_id": json.Number("987654321"),
	}
}

func signed(t *testing.T, k testKey, s Statement) []byte {
	t.Helper()
	env, key, err := Sign(context.Background(), s, k.signFunc())
	if err != nil {
		t.Fatal(err)
	}
	if key.Fingerprint != k.Fingerprint {
		t.Fatalf("signed by %s, want %s", key.Fingerprint, k.Fingerprint)
	}
	return env
}

func TestKeylessStatementCarriesTheClaims(t *testing.T) {
	ci := CIFromClaims("https://ci.example.test", githubClaims())
	s := NewKeyless(release(), ci)
	if s.Type != StatementType || s.PredicateType != PredicateType {
		t.Fatalf("types %q %q", s.Type, s.PredicateType)
	}
	if got := s.Predicate.RunDetails.Builder.ID; got != "https://ci.example.test" {
		t.Errorf("builder %q", got)
	}
	ext := s.Predicate.BuildDefinition.ExternalParameters
	for k, want := range map[string]string{
		"repository": "acme/terraform-provider-widget", "ref": "refs/tags/v1.2.3",
		"workflow": "acme/terraform-provider-widget/.github/workflows/release.yml@refs/tags/v1.2.3",
		"commit":   "0123456789abcdef0123456789abcdef01234567", "provider": "acme/widget", "version": "1.2.3",
	} {
		if ext[k] != want {
			t.Errorf("externalParameters[%s] = %q, want %q", k, ext[k], want)
		}
	}
	if got := s.Predicate.RunDetails.Metadata.InvocationID; got != "987654321" {
		t.Errorf("run id %q", got)
	}
	if len(s.Subject) != 2 || s.Subject[0].Name != "terraform-provider-widget_1.2.3_darwin_arm64.zip" || s.Subject[0].Digest["sha256"] != digestB {
		t.Errorf("subjects %+v", s.Subject)
	}
}

func TestCIFromGitLabClaimsAndHostileValues(t *testing.T) {
	ci := CIFromClaims("https://gitlab.test", map[string]any{
		"project_path": "grp/proj", "ref": "main\x00\n", "ci_config_ref_uri": "gitlab.test/grp/proj//.gitlab-ci.yml@refs/heads/main",
		"sha": strings.Repeat("f", 5000), "pipeline_id": float64(42), "repository": 17,
	})
	if ci.Repository != "grp/proj" || ci.Ref != "main" || ci.RunID != "42" || len(ci.Commit) != maxClaimLength ||
		ci.Workflow != "gitlab.test/grp/proj//.gitlab-ci.yml@refs/heads/main" {
		t.Errorf("%+v", ci)
	}
}

func TestPublishStatementNamesThePublisher(t *testing.T) {
	s := NewPublish(release(), Identity{User: "alice", TokenID: "tok123"})
	ext := s.Predicate.BuildDefinition.ExternalParameters
	if s.Predicate.BuildDefinition.BuildType != BuildTypePublish || ext["user"] != "alice" || ext["token"] != "tok123" ||
		s.Predicate.RunDetails.Builder.ID != TroveBuilderID {
		t.Errorf("%+v", s.Predicate)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	k := newKey(t, "acme")
	s := NewKeyless(release(), CIFromClaims("https://ci.example.test", githubClaims()))
	env := signed(t, k, s)

	v, err := Verify(context.Background(), env, []registry.SigningKey{k.public}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Key.Fingerprint != k.Fingerprint {
		t.Errorf("verified by %s", v.Key.Fingerprint)
	}
	if err := v.Statement.CheckArchive("terraform-provider-widget_1.2.3_linux_amd64.zip", digestA); err != nil {
		t.Error(err)
	}
	if err := v.Statement.CheckArchive("terraform-provider-widget_1.2.3_linux_amd64.zip", digestB); err == nil {
		t.Error("a wrong digest was accepted")
	}
	if err := v.Statement.CheckArchive("terraform-provider-widget_1.2.3_windows_amd64.zip", digestA); err == nil {
		t.Error("an archive the statement does not name was accepted")
	}

	// The library's own verifier, given only the key, agrees; and the
	// signature is over the PAE as the DSSE specification defines it.
	var e dsse.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	if e.Signatures[0].KeyID != k.Fingerprint {
		t.Errorf("keyid %q, want the fingerprint %s", e.Signatures[0].KeyID, k.Fingerprint)
	}
	ev, err := dsse.NewEnvelopeVerifier(Verifier{Key: k.public})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Verify(context.Background(), &e); err != nil {
		t.Fatalf("dsse library: %v", err)
	}
	body, _ := base64.StdEncoding.DecodeString(e.Payload)
	pae := []byte("DSSEv1 28 application/vnd.in-toto+json " + itoa(len(body)) + " " + string(body))
	sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
	if _, err := signing.VerifyDetached([]registry.SigningKey{k.public}, pae, sig); err != nil {
		t.Fatalf("the signature is not over the PAE bytes: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestVerifyRefusesTamperedAndHostileEnvelopes(t *testing.T) {
	k := newKey(t, "acme")
	other := newKey(t, "other")
	env := signed(t, k, NewKeyless(release(), CIFromClaims("https://ci.example.test", githubClaims())))
	var good dsse.Envelope
	if err := json.Unmarshal(env, &good); err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(e *dsse.Envelope)) []byte {
		e := good
		e.Signatures = append([]dsse.Signature(nil), good.Signatures...)
		f(&e)
		out, _ := json.Marshal(e)
		return out
	}
	payload, _ := base64.StdEncoding.DecodeString(good.Payload)
	sig, _ := base64.StdEncoding.DecodeString(good.Signatures[0].Sig)
	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)-3] ^= 1
	unsignedStmt := signed(t, k, Statement{Type: StatementType, PredicateType: PredicateType})
	badSubject := signed(t, k, Statement{Type: StatementType, PredicateType: PredicateType, Subject: []Subject{{Name: "x.zip", Digest: map[string]string{"sha256": "nothex"}}}})
	otherType := signed(t, k, Statement{Type: "https://in-toto.io/Statement/v0.1", PredicateType: PredicateType, Subject: []Subject{{Name: "x.zip", Digest: map[string]string{"sha256": digestA}}}})

	cases := map[string]struct {
		env  []byte
		keys []registry.SigningKey
		want string
	}{
		"tampered statement": {mutate(func(e *dsse.Envelope) {
			e.Payload = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte(digestA), []byte(digestB), 1))
		}), nil, "does not verify"},
		"tampered payload type": {mutate(func(e *dsse.Envelope) { e.PayloadType = "application/json" }), nil, "payloadType"},
		"tampered signature":    {mutate(func(e *dsse.Envelope) { e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(flipped) }), nil, "does not verify"},
		"signature not base64":  {mutate(func(e *dsse.Envelope) { e.Signatures[0].Sig = "!!!" }), nil, "does not verify"},
		"payload not base64":    {mutate(func(e *dsse.Envelope) { e.Payload = "%%%" }), nil, "does not verify"},
		"no signatures":         {mutate(func(e *dsse.Envelope) { e.Signatures = nil }), nil, "no signatures"},
		"another key":           {env, []registry.SigningKey{other.public}, "does not verify"},
		"no keys":               {env, []registry.SigningKey{}, "no public key"},
		"not JSON":              {[]byte("{not json"), nil, "not a DSSE envelope"},
		"trailing data":         {append(append([]byte(nil), env...), []byte(" {}")...), nil, "not a DSSE envelope"},
		"unknown field":         {[]byte(`{"payloadType":"x","payload":"","signatures":[],"evil":1}`), nil, "not a DSSE envelope"},
		"huge":                  {bytes.Repeat([]byte(" "), MaxEnvelopeBytes+1), nil, "more than"},
		"no subjects":           {unsignedStmt, nil, "no subjects"},
		"bad subject digest":    {badSubject, nil, "sha256 digest"},
		"other statement type":  {otherType, nil, "not an in-toto Statement v1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			keys := c.keys
			if keys == nil {
				keys = []registry.SigningKey{k.public}
			}
			_, err := Verify(context.Background(), c.env, keys, time.Time{})
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}
