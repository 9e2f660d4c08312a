package operations_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/webhook"
)

// reopen replaces e.ops by operations on e's index with the options
// change makes (a mirror change hook, a garbage collector).
func (e *env) reopen(change func(*operations.Options)) {
	opt := operations.Options{Index: e.idx, Access: auth.NewAccess(e.authn, e.idx), Audit: audit.New(e.idx, nil),
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}), Now: func() time.Time { return e.now }}
	change(&opt)
	e.ops = operations.New(opt)
}

// moreState is what the operations of the mirror, the deletes and the
// collections may write beyond state: the mirror's upstreams and
// decisions, the versions of every provider and module of acme, and the
// webhook deliveries enqueued.
type moreState struct {
	Upstreams  []registry.MirrorUpstream
	Decisions  []registry.MirrorDecision
	Providers  []registry.Provider
	Modules    []registry.Module
	Deliveries int
}

func (e *env) moreState(t *testing.T) moreState {
	t.Helper()
	ctx := t.Context()
	var s moreState
	var err error
	if s.Upstreams, err = e.idx.ListMirrorUpstreams(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range s.Upstreams {
		ds, err := e.idx.ListMirrorDecisions(ctx, u.Host, "", "")
		if err != nil {
			t.Fatal(err)
		}
		s.Decisions = append(s.Decisions, ds...)
	}
	if s.Providers, err = e.idx.ListProviders(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if s.Modules, _, err = e.idx.ListModules(ctx, registry.ModuleFilter{Namespace: "acme"}); err != nil {
		t.Fatal(err)
	}
	ds, err := e.idx.ListWebhookDeliveries(ctx, "wh_test", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	s.Deliveries = len(ds)
	return s
}

// refusedAll is refused that also checks moreState.
func (e *env) refusedAll(t *testing.T, want registry.Kind, op func(ctx context.Context) error) {
	t.Helper()
	before := e.moreState(t)
	e.refused(t, want, op)
	if after := e.moreState(t); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused operation changed the mirror, the versions or the webhook outbox:\nbefore %+v\nafter  %+v", before, after)
	}
}

const testCA = `-----BEGIN CERTIFICATE-----
MIIBdjCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjASMRAwDgYDVQQDEwd0ZXN0IGNhMB4XDTI0MDEwMTAwMDAwMFoXDTM0MDEwMTAwMDAwMFowEjEQMA4GA1UEAxMHdGVzdCBjYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABAAA
-----END CERTIFICATE-----
`

// TestMirrorUpstreamsRefused: only global admins set and delete the
// mirror's upstreams; hostile hosts and configurations are refused;
// nothing is stored, the mirror is not told to reload.
func TestMirrorUpstreamsRefused(t *testing.T) {
	e := newEnv(t)
	reloads := 0
	e.reopen(func(o *operations.Options) { o.OnMirrorChange = func() { reloads++ } })
	alice, root := e.user(t, "alice"), e.user(t, "root")
	nsAdmin := e.service(t, registry.ScopeAdmin, "acme")
	publisher := e.service(t, registry.ScopePublish)
	good := apispec.PutMirrorUpstreamRequest{Allow: []apispec.MirrorRule{{Provider: "hashicorp/*", MinAge: "7d"}}}
	with := func(f func(*apispec.PutMirrorUpstreamRequest)) apispec.PutMirrorUpstreamRequest {
		r := good
		r.Allow = append([]apispec.MirrorRule(nil), good.Allow...)
		f(&r)
		return r
	}
	manyRules := make([]apispec.MirrorRule, registry.MaxMirrorRules+1)
	for i := range manyRules {
		manyRules[i] = apispec.MirrorRule{Provider: "hashicorp/*"}
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		host  string
		req   apispec.PutMirrorUpstreamRequest
		want  registry.Kind
	}{
		{"by a namespace admin", alice, "registry.example.com", good, registry.Forbidden},
		{"by a namespace-bound admin token", nsAdmin, "registry.example.com", good, registry.Forbidden},
		{"by a publish token", publisher, "registry.example.com", good, registry.Forbidden},
		{"host with a path", root, "registry.example.com/../x", good, registry.Invalid},
		{"host with NUL", root, "registry.example.com\x00", good, registry.Invalid},
		{"host with a newline", root, "registry.example.com\nevil", good, registry.Invalid},
		{"host too long", root, strings.Repeat("a", 300) + ".example.com", good, registry.Invalid},
		{"a DNS label over 63 characters", root, strings.Repeat("a", 64) + ".example", good, registry.Invalid},
		{"a last DNS label over 63 characters", root, "x." + strings.Repeat("b", 64), good, registry.Invalid},
		{"empty host", root, "", good, registry.Invalid},
		{"http service URL", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.ServiceURL = "http://registry.example.com/v1/providers/" }), registry.Invalid},
		{"service URL with user", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) {
			r.ServiceURL = "https://u:p@registry.example.com/v1/providers/"
		}), registry.Invalid},
		{"service URL with query", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) {
			r.ServiceURL = "https://registry.example.com/v1/providers/?x=1"
		}), registry.Invalid},
		{"relative service URL", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.ServiceURL = "/v1/providers/" }), registry.Invalid},
		{"file service URL", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.ServiceURL = "file:///etc/passwd" }), registry.Invalid},
		{"service URL with a newline", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.ServiceURL = "https://registry.example.com/\n" }), registry.Invalid},
		{"a private key as CA", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) {
			r.CACertificates = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"
		}), registry.Invalid},
		{"CA that is no PEM", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.CACertificates = "not a certificate" }), registry.Invalid},
		{"CA that does not parse", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.CACertificates = testCA }), registry.Invalid},
		{"min age that is no age", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Allow[0].MinAge = "soon" }), registry.Invalid},
		{"negative min age", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Allow[0].MinAge = "-7d" }), registry.Invalid},
		{"rule with a path", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Allow[0].Provider = "../../etc" }), registry.Invalid},
		{"rule with a bad constraint", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Allow[0].Versions = "newest please" }), registry.Invalid},
		{"too many rules", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Allow = manyRules }), registry.Invalid},
		{"description with a control character", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Description = "a\x1b[31mb" }), registry.Invalid},
		{"description too long", root, "registry.example.com", with(func(r *apispec.PutMirrorUpstreamRequest) { r.Description = strings.Repeat("d", 100_000) }), registry.Invalid},
	} {
		t.Run("put/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, tc.want, func(ctx context.Context) error {
				_, _, err := e.ops.PutMirrorUpstream(ctx, tc.actor, tc.host, tc.req)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		host  string
		want  registry.Kind
	}{
		{"by a namespace admin", alice, "registry.terraform.io", registry.Forbidden},
		{"by a publish token", publisher, "registry.terraform.io", registry.Forbidden},
		{"absent upstream", root, "nowhere.example.com", registry.NotFound},
		{"host with NUL", root, "registry.terraform.io\x00", registry.Invalid},
		{"host with a path", root, "../registry.terraform.io", registry.Invalid},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteMirrorUpstream(ctx, tc.actor, tc.host) })
		})
	}
	if reloads != 0 {
		t.Errorf("refused changes told the mirror to reload %d times", reloads)
	}
}

// TestMirrorUpstreams: a global admin creates, replaces and deletes an
// upstream; each change is audited and makes the mirror reload.
func TestMirrorUpstreams(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	reloads := 0
	e.reopen(func(o *operations.Options) { o.OnMirrorChange = func() { reloads++ } })
	root := e.user(t, "root")
	req := apispec.PutMirrorUpstreamRequest{ServiceURL: "https://Registry.Example.com/v1/providers/",
		Allow: []apispec.MirrorRule{{Provider: "hashicorp/*", Versions: ">= 1.0", MinAge: "7d"}}, Description: "main"}
	u, created, err := e.ops.PutMirrorUpstream(ctx, root, "Registry.Example.COM:443", req)
	if err != nil || !created || u.Host != "registry.example.com" || len(u.Allow) != 1 || u.Allow[0].MinAge != 7*24*time.Hour {
		t.Fatalf("create: %v created=%v %+v", err, created, u)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMirrorUpstreamPut || a.Target != "registry.example.com" || a.Actor != "user:root" ||
		a.SourceAddr != "192.0.2.7" || a.Details != "created; service URL https://Registry.Example.com/v1/providers/; allows hashicorp/* >= 1.0 min age 7d" {
		t.Errorf("audited as %+v", a)
	}
	first := u.CreatedAt
	e.now = e.now.Add(time.Hour)
	req.Allow = nil
	if u, created, err = e.ops.PutMirrorUpstream(ctx, root, "registry.example.com", req); err != nil || created || !u.CreatedAt.Equal(first) || len(u.Allow) != 0 {
		t.Fatalf("replace: %v created=%v %+v", err, created, u)
	}
	if a := e.lastAudit(t); !strings.HasPrefix(a.Details, "replaced") || !strings.HasSuffix(a.Details, "allows nothing") {
		t.Errorf("replacement audited as %+v", a)
	}
	if err := e.ops.DeleteMirrorUpstream(ctx, root, "REGISTRY.example.com"); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMirrorUpstreamDelete || a.Target != "registry.example.com" {
		t.Errorf("delete audited as %+v", a)
	}
	if reloads != 3 {
		t.Errorf("the mirror was told to reload %d times; want 3", reloads)
	}
}

// TestMirrorDecisionsRefused: only global admins approve, deny and
// withdraw; hostile names, versions and reasons are refused; nothing is
// stored, audited or announced.
func TestMirrorDecisionsRefused(t *testing.T) {
	e := newEnv(t)
	alice, root := e.user(t, "alice"), e.user(t, "root")
	publisher := e.service(t, registry.ScopePublish)
	// A stored denial, so that withdrawals could find something.
	aws := operations.MirroredProvider{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "aws"}
	if _, _, err := e.ops.DecideMirror(t.Context(), root, aws, registry.MirrorDeny, "5.0.0", "bad"); err != nil {
		t.Fatal(err)
	}
	p := func(host, ns, typ string) operations.MirroredProvider {
		return operations.MirroredProvider{Host: host, Namespace: ns, Type: typ}
	}
	for _, tc := range []struct {
		name             string
		actor            operations.Actor
		p                operations.MirroredProvider
		kind             registry.MirrorDecisionKind
		versions, reason string
		want             registry.Kind
	}{
		{"approval by a namespace admin", alice, aws, registry.MirrorApprove, "5.1.0", "", registry.Forbidden},
		{"denial by a publish token", publisher, aws, registry.MirrorDeny, "5.1.0", "", registry.Forbidden},
		{"host with NUL", root, p("registry.terraform.io\x00", "hashicorp", "aws"), registry.MirrorApprove, "5.1.0", "", registry.Invalid},
		{"namespace path", root, p("registry.terraform.io", "../hashicorp", "aws"), registry.MirrorApprove, "5.1.0", "", registry.Invalid},
		{"type with a slash", root, p("registry.terraform.io", "hashicorp", "aws/x"), registry.MirrorDeny, "5.1.0", "", registry.Invalid},
		{"type too long", root, p("registry.terraform.io", "hashicorp", strings.Repeat("a", 10_000)), registry.MirrorDeny, "5.1.0", "", registry.Invalid},
		{"approval of a constraint", root, aws, registry.MirrorApprove, "~> 5.0", "", registry.Invalid},
		{"approval of nothing", root, aws, registry.MirrorApprove, "", "", registry.Invalid},
		{"denial of nothing", root, aws, registry.MirrorDeny, "  ", "", registry.Invalid},
		{"denial of words", root, aws, registry.MirrorDeny, "the bad ones", "", registry.Invalid},
		{"denial too long", root, aws, registry.MirrorDeny, strings.Repeat(">= 1.0, ", 5_000), "", registry.Invalid},
		{"reason with a newline", root, aws, registry.MirrorDeny, "5.1.0", "a\nb", registry.Invalid},
		{"reason with an escape", root, aws, registry.MirrorApprove, "5.1.0", "\x1b[2J", registry.Invalid},
		{"reason too long", root, aws, registry.MirrorApprove, "5.1.0", strings.Repeat("r", 100_000), registry.Invalid},
		{"unknown kind", root, aws, "maybe", "5.1.0", "", registry.Invalid},
	} {
		t.Run("decide/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, tc.want, func(ctx context.Context) error {
				_, _, err := e.ops.DecideMirror(ctx, tc.actor, tc.p, tc.kind, tc.versions, tc.reason)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name     string
		actor    operations.Actor
		p        operations.MirroredProvider
		kind     registry.MirrorDecisionKind
		versions string
		want     registry.Kind
	}{
		{"by a namespace admin", alice, aws, registry.MirrorDeny, "5.0.0", registry.Forbidden},
		{"by a publish token", publisher, aws, registry.MirrorDeny, "5.0.0", registry.Forbidden},
		{"of nothing", root, aws, registry.MirrorDeny, "", registry.Invalid},
		{"too long", root, aws, registry.MirrorDeny, strings.Repeat("1", 10_000), registry.Invalid},
		{"unknown kind", root, aws, "maybe", "5.0.0", registry.Invalid},
		{"absent decision", root, aws, registry.MirrorApprove, "5.0.0", registry.NotFound},
		{"of another provider", root, p("registry.terraform.io", "hashicorp", "google"), registry.MirrorDeny, "5.0.0", registry.NotFound},
		{"namespace path", root, p("registry.terraform.io", "..", "aws"), registry.MirrorDeny, "5.0.0", registry.Invalid},
	} {
		t.Run("withdraw/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, tc.want, func(ctx context.Context) error {
				return e.ops.WithdrawMirror(ctx, tc.actor, tc.p, tc.kind, tc.versions)
			})
		})
	}
}

// TestMirrorDecisions: a global admin approves, denies and withdraws;
// each is audited and announced in its transaction.
func TestMirrorDecisions(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	root := e.user(t, "root")
	p := operations.MirroredProvider{Host: "Registry.Terraform.IO", Namespace: "HashiCorp", Type: "AWS"}
	d, created, err := e.ops.DecideMirror(ctx, root, p, registry.MirrorApprove, "5.81.0", "reviewed")
	if err != nil || !created || d.Host != "registry.terraform.io" || d.Namespace != "hashicorp" || d.Type != "aws" || d.CreatedBy != "user:root" {
		t.Fatalf("approve: %v created=%v %+v", err, created, d)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMirrorApprove || a.Target != "registry.terraform.io/hashicorp/aws 5.81.0" || a.Details != "reviewed" {
		t.Errorf("approval audited as %+v", a)
	}
	if _, created, err = e.ops.DecideMirror(ctx, root, p, registry.MirrorApprove, "5.81.0", "reviewed again"); err != nil || created {
		t.Errorf("approving again: %v created=%v; want the reason replaced", err, created)
	}
	if _, _, err := e.ops.DecideMirror(ctx, root, p, registry.MirrorDeny, " >= 5.82.0, < 5.82.3 ", "compromised"); err != nil {
		t.Fatal(err)
	}
	if err := e.ops.WithdrawMirror(ctx, root, p, registry.MirrorDeny, ">= 5.82.0, < 5.82.3"); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMirrorUndeny || a.Target != "registry.terraform.io/hashicorp/aws >= 5.82.0, < 5.82.3" {
		t.Errorf("withdrawal audited as %+v", a)
	}
	if err := e.ops.WithdrawMirror(ctx, root, p, registry.MirrorApprove, "5.81.0"); err != nil {
		t.Fatal(err)
	}
	want := []string{registry.EventMirrorApproved, registry.EventMirrorApproved, registry.EventMirrorDenied, registry.EventMirrorUndenied, registry.EventMirrorUnapproved}
	if got := e.deliveries(t); !sameElements(got, want) {
		t.Errorf("webhook deliveries %q; want %q", got, want)
	}
	if ds, err := e.idx.ListMirrorDecisions(ctx, "registry.terraform.io", "", ""); err != nil || len(ds) != 0 {
		t.Errorf("decisions after withdrawing both: %v %+v", err, ds)
	}
}

// sameElements reports whether a and b hold the same strings, in any
// order.
func sameElements(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[string]int{}
	for _, s := range a {
		n[s]++
	}
	for _, s := range b {
		n[s]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return true
}

// TestNormalizeHostRefusesHostileHosts: hosts no registry can have are
// refused, and the forms of one host normalize alike.
func TestNormalizeHostRefusesHostileHosts(t *testing.T) {
	for given, want := range map[string]string{
		"Registry.Example.COM":         "registry.example.com",
		"registry.example.com:443":     "registry.example.com",
		"registry.example.com:8443":    "registry.example.com:8443",
		strings.Repeat("a", 63) + ".x": strings.Repeat("a", 63) + ".x",
		// A label DNS cannot carry: refused only for a new upstream
		// (TestMirrorUpstreamsRefused), still found to be read
		// or removed.
		strings.Repeat("a", 64) + ".example": strings.Repeat("a", 64) + ".example",
	} {
		if got, err := operations.NormalizeHost(given); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", given, got, err, want)
		}
	}
	for _, given := range []string{"", "a..b", "-a.example", "a\x00b.example", "a b.example",
		"registry.example.com:99999", "registry.example.com/path", "user@registry.example.com"} {
		if got, err := operations.NormalizeHost(given); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("NormalizeHost(%q) = %q, %v; want Invalid", given, got, err)
		}
	}
}
