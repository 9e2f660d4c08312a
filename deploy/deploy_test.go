package deploy

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"trove.dev/trove/internal/config"
)

// settings returns the TROVE_* variables `trove serve` reads.
func settings() map[string]bool {
	var c config.Config
	known := map[string]bool{}
	c.FlagSet("serve").VisitAll(func(f *flag.Flag) { known[config.EnvVar(f.Name)] = true })
	return known
}

// loadConfig runs Trove's own configuration loading and validation on
// env, as `trove serve` would at start, with args on its command line.
func loadConfig(t *testing.T, args []string, env map[string]string) config.Config {
	t.Helper()
	c, err := config.Load(args, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("trove serve would refuse these settings: %v\n%v", err, env)
	}
	return c
}

// compose is the part of the Compose specification deploy/compose.yaml
// uses; decoding is strict, so a misspelt key fails the test.
type compose struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		Environment string `yaml:"environment"`
		File        string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Secrets     []string          `yaml:"secrets"`
	DependsOn   any               `yaml:"depends_on"`
	Restart     string            `yaml:"restart"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	if got := sortedKeys(c.Services); !slices.Equal(got, []string{"postgres", "s3", "s3-bucket", "trove"}) {
		t.Errorf("services %v, want postgres, s3, s3-bucket, trove", got)
	}
	tr := c.Services["trove"]
	if tr.Image != "${TROVE_IMAGE:-trove:latest}" || !slices.Equal(tr.Command, []string{"serve"}) {
		t.Errorf("trove runs %s %v", tr.Image, tr.Command)
	}
	if !slices.Equal(tr.Ports, []string{"8443:8443"}) {
		t.Errorf("trove publishes %v, want 8443:8443", tr.Ports)
	}
	known := settings()
	for k := range tr.Environment {
		if !known[k] {
			t.Errorf("compose.yaml sets %s, which trove serve does not read", k)
		}
	}
	for _, s := range tr.Secrets {
		if c.Secrets[s].Environment == "" && c.Secrets[s].File == "" {
			t.Errorf("the trove service uses the secret %q, which is not defined", s)
		}
	}
	deps, _ := tr.DependsOn.(map[string]any)
	if sortedKeys(deps) == nil || deps["postgres"] == nil || deps["s3-bucket"] == nil {
		t.Errorf("trove does not wait for postgres and the bucket: depends_on %v", tr.DependsOn)
	}
	// The settings are those Trove accepts for PostgreSQL and S3, and
	// they point at the other services with their credentials.
	cfg := loadConfig(t, nil, tr.Environment)
	if cfg.Index.Backend != "postgres" || cfg.Blobs.Backend != "s3" || cfg.Blobs.S3.DownloadMode != config.DownloadProxy {
		t.Errorf("index %s, blobs %s, download mode %s; want postgres, s3, proxy", cfg.Index.Backend, cfg.Blobs.Backend, cfg.Blobs.S3.DownloadMode)
	}
	pg := c.Services["postgres"].Environment
	if want := "postgres://" + pg["POSTGRES_USER"] + ":" + pg["POSTGRES_PASSWORD"] + "@postgres:5432/" + pg["POSTGRES_DB"] + "?sslmode=disable"; cfg.Index.Postgres.DSN != want {
		t.Errorf("DSN %q, want %q", cfg.Index.Postgres.DSN, want)
	}
	s3 := c.Services["s3"]
	if cfg.Blobs.S3.AccessKey != s3.Environment["ROOT_ACCESS_KEY_ID"] || cfg.Blobs.S3.SecretKey != s3.Environment["ROOT_SECRET_ACCESS_KEY"] {
		t.Error("trove's S3 keys are not the S3 server's")
	}
	if !slices.Contains(s3.Command, ":7070") || cfg.Blobs.S3.Endpoint != "http://s3:7070" {
		t.Errorf("the S3 server runs %v; trove uses %s", s3.Command, cfg.Blobs.S3.Endpoint)
	}
	if mb := c.Services["s3-bucket"].Command; !slices.Contains(mb, "s3://"+cfg.Blobs.S3.Bucket) {
		t.Errorf("the bucket service runs %v, not making bucket %s", mb, cfg.Blobs.S3.Bucket)
	}
}

// TestSystemdUnit checks that the unit's command line and environment are
// what trove serve accepts, and, where systemd-analyze is installed, that
// systemd accepts the unit.
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile("trove.service")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	var exec0 []string
	known := settings()
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch k {
		case "Environment":
			name, value, _ := strings.Cut(v, "=")
			if strings.HasPrefix(name, config.EnvPrefix) && !known[name] {
				t.Errorf("trove.service sets %s, which trove serve does not read", name)
			}
			env[name] = value
		case "ExecStart":
			exec0 = strings.Fields(v)
		}
	}
	if len(exec0) < 2 || exec0[0] != "/usr/local/bin/trove" || exec0[1] != "serve" {
		t.Fatalf("ExecStart runs %q", exec0)
	}
	settingsFile := filepath.Join(t.TempDir(), "trove.env")
	if err := os.WriteFile(settingsFile, []byte("TROVE_LISTEN=0.0.0.0:8443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(exec0[2:])
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "${CREDENTIALS_DIRECTORY}/trove.env", settingsFile)
	}
	cfg := loadConfig(t, args, env)
	if cfg.DataDir != "/var/lib/trove" || cfg.File != settingsFile || cfg.Listen != "0.0.0.0:8443" {
		t.Errorf("data dir %s, settings file %s, listen %s", cfg.DataDir, cfg.File, cfg.Listen)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit's syntax is not checked by systemd")
		return
	}
	// systemd-analyze verify wants the command to exist: this test's
	// executable stands in for /usr/local/bin/trove.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "trove.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(data, []byte("/usr/local/bin/trove"), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestHelmChartSettings renders the chart with helm template, default and
// HA values, and runs Trove's own configuration loading on what a pod
// gets: the ConfigMap and the environment of the Deployment. The
// Kubernetes API types of every document are checked by the module in
// helm/test.
func TestHelmChartSettings(t *testing.T) {
	helm := os.Getenv("TROVE_TEST_HELM")
	if helm == "" {
		t.Fatal("TROVE_TEST_HELM is not set: run `source scripts/testenv/helm.sh` (it builds Helm once) and run again")
	}
	known := settings()
	for name, args := range map[string][]string{
		"default": nil,
		"ha":      {"-f", "helm/trove/ci/ha-values.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(helm, append([]string{"template", "trove", "helm/trove"}, args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, stderr.String())
			}
			env := map[string]string{}
			var secretEnv []string
			dec := yaml.NewDecoder(bytes.NewReader(out))
			for {
				var doc struct {
					Kind string            `yaml:"kind"`
					Data map[string]string `yaml:"data"`
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct {
									Env []struct {
										Name string `yaml:"name"`
									} `yaml:"env"`
								} `yaml:"containers"`
							} `yaml:"spec"`
						} `yaml:"template"`
					} `yaml:"spec"`
				}
				if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				switch doc.Kind {
				case "ConfigMap":
					for k, v := range doc.Data {
						env[k] = v
					}
				case "Deployment":
					for _, e := range doc.Spec.Template.Spec.Containers[0].Env {
						secretEnv = append(secretEnv, e.Name)
					}
				}
			}
			for _, k := range secretEnv {
				env[k] = "postgres://trove:secret@db:5432/trove" // a stand-in for the Secret's value
				if k != "TROVE_POSTGRES_DSN" {
					env[k] = "from-a-secret"
				}
			}
			for k := range env {
				if !known[k] {
					t.Errorf("the chart sets %s, which trove serve does not read", k)
				}
			}
			if !slices.Contains(secretEnv, "TROVE_POSTGRES_DSN") {
				t.Error("the DSN does not come from a Secret")
			}
			cfg := loadConfig(t, nil, env)
			if cfg.Index.Backend != "postgres" || cfg.Blobs.Backend != "s3" || !cfg.InsecureHTTP || cfg.Signing.SecretFile == "" {
				t.Errorf("index %s, blobs %s, insecure-http %v, signing secret %q", cfg.Index.Backend, cfg.Blobs.Backend, cfg.InsecureHTTP, cfg.Signing.SecretFile)
			}
		})
	}
}

var troveVar = regexp.MustCompile(`TROVE_[A-Z0-9_]+`)

// TestDeployFilesNameRealSettings scans every deployment file for TROVE_*
// names, in comments and templates too, so that a renamed setting cannot
// linger anywhere.
func TestDeployFilesNameRealSettings(t *testing.T) {
	known := settings()
	// Names the files use that are not settings of trove serve.
	others := map[string]bool{"TROVE_IMAGE": true, "TROVE_SIGNING_SECRET": true, "TROVE_TOKEN": true}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sum") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range troveVar.FindAllString(string(data), -1) {
			if !known[name] && !others[name] {
				t.Errorf("%s names %s, which trove serve does not read", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}
