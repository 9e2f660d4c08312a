package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/ciissuer/ciissuertest"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestBundleModuleUnderProvenancePolicy is the story of a namespace that
// takes modules only from one repository's release builds, fed by air-gap
// bundles: a connected Trove, whose namespace has a Trove-managed key,
// receives a keyless publish of a module from the test CI issuer (so the
// version carries signed provenance of that build) and exports it in a
// bundle. A disconnected Trove's namespace has a provenance policy: while
// the policy trusts another key, trusts no key, or admits another
// repository, `trove bundle import` is refused with the reason and nothing
// is stored (the modules.v1 versions list stays empty); once it lists the
// exporting namespace's managed key as import key, the same bundle is
// imported, terraform and tofu install the module from the disconnected
// Trove (its files as published), and the API and `trove verify
// --provenance` show the imported provenance, signed by the exporting
// Trove's key and naming the CI build.
func TestBundleModuleUnderProvenancePolicy(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	const (
		module  = namespace + "/labels/null"
		version = "1.0.0"
		repo    = "acme/infra"
		refs    = "refs/tags/v*"
	)

	// The connected Trove: a managed key, and a trust policy for the
	// release pipeline's tags, which publishes the module keyless.
	source := startTrove(t, filepath.Join(t.TempDir(), "source"))
	iss := ciissuertest.Start(t)
	source.mustCLI(t, source.AdminToken, "namespace", "create", namespace)
	var managed apispec.SigningKey
	if out := source.mustCLI(t, source.AdminToken, "key", "generate", namespace, "--json"); json.Unmarshal([]byte(out), &managed) != nil || !managed.Managed || managed.ASCIIArmor == "" {
		t.Fatalf("trove key generate --json printed %q", out)
	}
	source.mustCLI(t, source.AdminToken, "trust-policy", "create", namespace, "--issuer", iss.URL,
		"--claim", "repository="+repo, "--claim", "ref="+refs)
	res := keylessCLI(t, source, iss, "module", "publish", module, version, writeModuleDir(t, "labels", version, ""))
	if res.Code != 0 || !strings.Contains(res.Stdout, "Published "+module+" "+version) {
		t.Fatalf("keyless trove module publish: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
	}
	bundle := filepath.Join(t.TempDir(), "modules.tar")
	source.mustCLI(t, source.AdminToken, "bundle", "export", "--output", bundle, "--module", module+"@"+version)
	source.stop(t)

	keys := t.TempDir()
	exporterKey := writeFile(t, keys, "exporting-trove.asc", []byte(managed.ASCIIArmor))
	otherKey := writeFile(t, keys, "other.asc", []byte(signingtest.NewKey(t, "other").ArmoredPublic))

	// The disconnected Trove refuses the bundle under each policy that
	// does not admit it, and stores nothing of it.
	target := startTrove(t, filepath.Join(t.TempDir(), "target"))
	target.mustCLI(t, target.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	for _, c := range []struct {
		name   string
		policy []string // the arguments after the namespace
		want   []string
	}{
		{"another import key", []string{"--repository", repo, "--refs", refs, "--import-key", otherKey},
			[]string{"module " + module + " " + version + ": its provenance does not verify with the import keys of namespace acme's provenance policy", "nothing was imported"}},
		{"no import key", []string{"--repository", repo, "--refs", refs},
			[]string{"has a provenance policy without import keys", "--import-key exporting-trove.asc"}},
		{"another repository", []string{"--repository", "acme/other", "--refs", refs, "--import-key", exporterKey},
			[]string{"namespace acme accepts only releases built from acme/other on a ref matching " + refs, "this build comes from repository " + repo}},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			target.mustCLI(t, target.AdminToken, append([]string{"provenance", "policy", "set", namespace}, c.policy...)...)
			r := target.cli(t, target.AdminToken, "bundle", "import", bundle)
			if r.Code != 1 || strings.Contains(r.Stdout, "imported") {
				t.Errorf("bundle import under a policy with %s: exit %d, want 1 and nothing imported\nstdout: %s\nstderr: %s", c.name, r.Code, r.Stdout, r.Stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(flatten(r.Stderr), w) {
					t.Errorf("bundle import under a policy with %s does not say %q:\n%s", c.name, w, r.Stderr)
				}
			}
			if vs := moduleVersions(t, target, module); len(vs) != 0 {
				t.Errorf("a refused import stored versions %v of %s", vs, module)
			}
		})
	}

	// The policy the build satisfies, with the exporting namespace's key.
	target.mustCLI(t, target.AdminToken, "provenance", "policy", "set", namespace, "--repository", repo, "--refs", refs, "--import-key", exporterKey)
	if out := target.mustCLI(t, target.AdminToken, "provenance", "policy", "show", namespace); !strings.Contains(out, managed.KeyID) {
		t.Errorf("trove provenance policy show does not list the import key %s:\n%s", managed.KeyID, out)
	}
	out := target.mustCLI(t, target.AdminToken, "bundle", "import", bundle)
	if !strings.Contains(out, "Module "+module+" "+version+": imported") {
		t.Fatalf("bundle import under the policy the build satisfies printed %q", out)
	}
	if vs := moduleVersions(t, target, module); len(vs) != 1 || vs[0] != version {
		t.Fatalf("after the import the modules.v1 protocol lists %v, want [%s]", vs, version)
	}

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, target, "")
		addModuleHost(t, tf, target)
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"labels\" {\n  source  = \"%s/%s\"\n  version = %q\n}\n\noutput \"text\" {\n  value = module.labels.text\n}\n", moduleHost, module, version)))
		init := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(init.Flat, "Downloading "+moduleHost+"/"+module+" "+version+" for labels...") {
			t.Errorf("%s init did not install the imported module:\n%s", client, init.Output)
		}
		if got := readModulesManifest(t, dir)["labels"]; got != version {
			t.Errorf("%s installed labels %q, want %s", client, got, version)
		}
		installed := filepath.Join(dir, ".terraform", "modules", "labels")
		for name, want := range map[string]string{
			"main.tf":   "output \"text\" {\n  value = \"labels " + version + "\"\n}\n",
			"README.md": "# labels\n\nThe labels module, version " + version + ".\n",
		} {
			if got, err := os.ReadFile(filepath.Join(installed, name)); err != nil || string(got) != want {
				t.Errorf("%s installed %s as %q (%v), want %q", client, name, got, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(installed, "terraform.tfstate")); !os.IsNotExist(err) {
			t.Errorf("the installed module holds terraform.tfstate (%v)", err)
		}
		if plan := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(plan.Flat, `text = "labels `+version+`"`) {
			t.Errorf("%s plan with the imported module:\n%s", client, plan.Output)
		}
	})

	// The API answers the provenance the exporting Trove signed, with the
	// import key that verified it.
	reader := createToken(t, target, "read")
	var answer apispec.ModuleProvenance
	provenancePath := "/api/v1/namespaces/" + namespace + "/modules/labels/null/versions/" + version + "/provenance"
	raw := target.getJSON(t, provenancePath, reader, &answer)
	if !answer.Imported || len(answer.Keys) != 1 || answer.Keys[0].KeyID != managed.KeyID || len(answer.Envelope) == 0 {
		t.Fatalf("the imported version's provenance answer: imported %v, keys %+v; want imported with the key %s", answer.Imported, answer.Keys, managed.KeyID)
	}

	// trove verify checks the archive the clients download against it:
	// with the keys the answer names, with the exporting Trove's key
	// held here, and not with another key.
	work := t.TempDir()
	archive := writeFile(t, work, "labels-null-"+version+".tar.gz", moduleArchive(t, target, module, version))
	answerFile := writeFile(t, work, "answer.json", raw.Body)
	built := "built by " + iss.URL + " " + repo + "; module " + module + " " + version
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"the keys the answer names", nil, 0,
			[]string{"OK   answer.json: signed by key " + managed.KeyID + " (a key the provenance file names", built, "OK   labels-null-" + version + ".tar.gz: matches the provenance"}},
		{"the exporting Trove's key", []string{"--key", exporterKey}, 0,
			[]string{"OK   answer.json: signed by key " + managed.KeyID + "; " + built, "OK   labels-null-" + version + ".tar.gz: matches the provenance"}},
		{"another key", []string{"--key", otherKey}, 1,
			[]string{"FAIL answer.json: ", "FAIL labels-null-" + version + ".tar.gz: no provenance that verified"}},
	} {
		r := target.cli(t, "", append(append([]string{"verify", "--provenance", answerFile}, c.args...), archive)...)
		if r.Code != c.code {
			t.Errorf("trove verify with %s: exit %d, want %d\nstdout: %s\nstderr: %s", c.name, r.Code, c.code, r.Stdout, r.Stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("trove verify with %s does not say %q:\n%s", c.name, w, r.Stdout)
			}
		}
	}
}
