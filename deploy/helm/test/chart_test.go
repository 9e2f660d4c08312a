package helmtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const chart = "../trove"

func helmBin(t *testing.T) string {
	t.Helper()
	h := os.Getenv("TROVE_TEST_HELM")
	if h == "" {
		t.Fatal("TROVE_TEST_HELM is not set: run `source scripts/testenv/helm.sh` from the repository root (it builds Helm once) and run again")
	}
	return h
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), errors.New(err.Error() + ": " + stderr.String())
	}
	return string(out), nil
}

// decoder decodes YAML or JSON into the Kubernetes API types of the kinds
// the chart renders, strictly: an unknown or duplicate field is an error.
func decoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// render runs helm template and decodes every document.
func render(t *testing.T, args ...string) []runtime.Object {
	t.Helper()
	out, err := helm(t, append([]string{"template", "trove", chart}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	dec := decoder(t)
	r := utilyaml.NewYAMLReader(bufioReader(out))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("a rendered document does not decode strictly into the Kubernetes API types: %v\n%s", err, doc)
		}
		if gvk.Kind == "" {
			t.Fatalf("a rendered document has no kind:\n%s", doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "---" {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

func TestHelmLint(t *testing.T) {
	for _, args := range [][]string{{"lint", "--strict", chart}, {"lint", "--strict", chart, "-f", chart + "/ci/ha-values.yaml"}} {
		if out, err := helm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

// TestStrictDecoding shows the decoder used above refuses what the API
// server would: a misspelt field, a wrong type, a duplicate field.
func TestStrictDecoding(t *testing.T) {
	dec := decoder(t)
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicaz: 2}\n",
		"wrong type":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: two}\n",
		"duplicate field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n",
		"unknown kind":    "apiVersion: apps/v1\nkind: Deploymnt\nmetadata: {name: x}\n",
		"probe typo":      "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, livenessProbe: {httpGet: {pth: /healthz, port: 80}}}]}\n",
	} {
		if _, _, err := dec.Decode([]byte(doc), nil, nil); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestTemplateDefault(t *testing.T) {
	objs := render(t)
	if got := kinds(objs); !slices.Equal(got, []string{"ConfigMap", "Deployment", "Service", "ServiceAccount"}) {
		t.Errorf("rendered %v", got)
	}
	d := find[*appsv1.Deployment](t, objs)
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas %d, want 1", *d.Spec.Replicas)
	}
	checkDeployment(t, d, "trove-postgres", "trove-s3")
	if d.Spec.Template.Spec.Containers[0].Image != "trove:0.1.0" {
		t.Errorf("image %s, want the chart's appVersion", d.Spec.Template.Spec.Containers[0].Image)
	}
	cm := find[*corev1.ConfigMap](t, objs)
	if cm.Data["TROVE_PUBLIC_URL"] != "https://trove.example.com" || cm.Data["TROVE_LISTEN"] != ":8080" {
		t.Errorf("config map %v", cm.Data)
	}
	svc := find[*corev1.Service](t, objs)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "http" || svc.Spec.Selector["app.kubernetes.io/name"] != "trove" {
		t.Errorf("service ports %+v selector %v", svc.Spec.Ports, svc.Spec.Selector)
	}
}

func TestTemplateHA(t *testing.T) {
	objs := render(t, "-f", chart+"/ci/ha-values.yaml")
	if got := kinds(objs); !slices.Equal(got, []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"}) {
		t.Errorf("rendered %v", got)
	}
	d := find[*appsv1.Deployment](t, objs)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
	}
	checkDeployment(t, d, "trove-db", "trove-s3-credentials")
	if len(d.Spec.Template.Spec.TopologySpreadConstraints) != 1 {
		t.Error("the topology spread constraint is lost")
	}
	cm := find[*corev1.ConfigMap](t, objs)
	for k, v := range map[string]string{
		"TROVE_S3_ENDPOINT": "https://s3.internal:9000", "TROVE_S3_PATH_STYLE": "true", "TROVE_DOWNLOAD_MODE": "proxy",
		"TROVE_POSTGRES_MAX_CONNS": "20", "TROVE_GC_INTERVAL": "24h", "TROVE_PUBLIC_URL": "https://registry.internal",
	} {
		if cm.Data[k] != v {
			t.Errorf("config map %s = %q, want %q", k, cm.Data[k], v)
		}
	}
	pdb := find[*policyv1.PodDisruptionBudget](t, objs)
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != "trove" {
		t.Errorf("pod disruption budget %+v", pdb.Spec)
	}
}

// TestTemplateRefusals: values Trove would refuse fail the render with a
// message naming the value.
func TestTemplateRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		set  []string
		want string
	}{
		"plain http public URL": {[]string{"publicURL=http://trove.example.com"}, "publicURL must be the https://"},
		"no public URL":         {[]string{"publicURL="}, "publicURL must be the https://"},
		"no database secret":    {[]string{"postgres.existingSecret="}, "postgres.existingSecret must name a Secret"},
		"no bucket":             {[]string{"s3.bucket="}, "s3.bucket must name an existing bucket"},
		"bad download mode":     {[]string{"s3.downloadMode=stream"}, "s3.downloadMode must be redirect or proxy"},
		"not a trove setting":   {[]string{"env.PATH=/tmp"}, `env: "PATH" is not a TROVE_* setting`},
		"lower-case setting":    {[]string{"env.trove_listen=:1"}, `is not a TROVE_* setting`},
	} {
		var args []string
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, append([]string{"template", "trove", chart}, args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: helm template gave %v, want an error containing %q\n%s", name, err, c.want, out)
		}
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, dbSecret, s3Secret string) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers", len(ps.Containers))
	}
	c := ps.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v", c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := "/healthz"
		if name == "readiness" {
			want = "/readyz"
		}
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.StrVal != "http" {
			t.Errorf("%s probe %+v, want GET %s on the http port", name, p, want)
		}
	}
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name
		}
	}
	if refs["TROVE_POSTGRES_DSN"] != dbSecret || refs["TROVE_S3_ACCESS_KEY"] != s3Secret || refs["TROVE_S3_SECRET_KEY"] != s3Secret {
		t.Errorf("secret references %v", refs)
	}
	sc := ps.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *sc.RunAsUser == 0 {
		t.Errorf("pod security context %+v: not non-root", sc)
	}
	if c.SecurityContext == nil || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil {
		t.Errorf("envFrom %+v, want the config map", c.EnvFrom)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("pods do not roll when the config map changes")
	}
}

func kinds(objs []runtime.Object) []string {
	var k []string
	for _, o := range objs {
		k = append(k, o.GetObjectKind().GroupVersionKind().Kind)
	}
	slices.Sort(k)
	return k
}

func find[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.(T); ok {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T rendered", zero)
	return zero
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
