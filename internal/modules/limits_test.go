package modules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// publishFiles publishes files as acme/<name>/aws 1.0.0.
func publishFiles(t *testing.T, e *publishEnv, ctx context.Context, name string, files map[string]string) (Result, error) {
	t.Helper()
	return e.pub.Publish(ctx, Upload{Namespace: "acme", Name: name, System: "aws", Version: "1.0.0", Archive: bytes.NewReader(packed(t, files))})
}

// assertNotStored fails unless acme/<name>/aws 1.0.0 is absent.
func assertNotStored(t *testing.T, e *publishEnv, name string) {
	t.Helper()
	if _, err := e.idx.GetModuleVersion(t.Context(), "acme", name, "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("%s: stored after a refused publish (%v)", name, err)
	}
}

// Inputs that overflow the stack of HCL's recursive parsers or of the
// evaluation terraform-config-inspect does (a fatal error, not a panic):
// without the nesting check each of them kills the test process.
func TestPublishRefusesDeepNesting(t *testing.T) {
	e := newPublishEnv(t)
	const n = 100000
	tests := []struct{ name, file, src string }{
		{"brackets", "main.tf", "locals { x = " + strings.Repeat("[", n)},
		{"json-arrays", "main.tf.json", `{"variable":` + strings.Repeat("[", 3*n)},
		{"json-template", "main.tf.json", `{"module": {"x": {"source": "${` + strings.Repeat("[", 3*n) + `}"}}}`},
		{"json-after-syntax-error", "main.tf.json", `{"a": 01, "variable": ` + strings.Repeat("[", 3*n)},
		{"parentheses", "main.tf", "locals { x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + " }\n"},
		{"quotes", "main.tf", "locals { x = " + strings.Repeat(`"${`, n) + "\n"},
		{"template-if", "main.tf", `variable "x" { default = "` + strings.Repeat("%{if true}", n) + "\"}\n"},
		{"unary", "main.tf", "locals { x = " + strings.Repeat("!", 4*n) + "true }\n"},
		{"conditional", "main.tf", `variable "x" { default = ` + strings.Repeat("true?1:", n) + "1 }\n"},
		{"binary-default", "main.tf", `variable "x" { default = 1` + strings.Repeat("+1", 10*n) + " }\n"},
		{"index", "main.tf", `variable "x" { default = a` + strings.Repeat("[b]", 2*n) + " }\n"},
		{"splat", "main.tf", `variable "x" { default = a` + strings.Repeat("[*]", 2*n) + " }\n"},
		{"submodule", "modules/deep/main.tf", "locals { x = " + strings.Repeat("{", n)},
		{"example", "examples/deep/main.tf.json", `{"variable":` + strings.Repeat("{\"a\":", 5*n)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"main.tf": mainTF}
			files[tt.file] = tt.src
			_, err := publishFiles(t, e, t.Context(), tt.name, files)
			if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), tt.file+":") ||
				!strings.Contains(err.Error(), fmt.Sprintf("more than %d levels deep", MaxConfigNesting)) {
				t.Fatalf("Publish = %v, want Invalid naming %s and the nesting limit", err, tt.file)
			}
			assertNotStored(t, e, tt.name)
		})
	}
}

// TestNestingLimit pins the boundary and checks that realistic shapes,
// however long, stay far below it.
func TestNestingLimit(t *testing.T) {
	deep := func(k int) string { // the block is one level
		return "locals {\n  x = " + strings.Repeat("[", k-1) + strings.Repeat("]", k-1) + "\n}\n"
	}
	chain := func(k int) string { return "locals {\n  x = 1" + strings.Repeat(" + 1", k-1) + "\n}\n" }
	var long strings.Builder
	long.WriteString("locals {\n")
	for i := range 500 {
		fmt.Fprintf(&long, "  a%d = var.x ? var.y + 1 : -var.z # comment %d\n", i, i)
		fmt.Fprintf(&long, "  b%d = [for k, v in var.m : \"${k}=${v}\" if v != null && k != \"\"]\n", i)
	}
	long.WriteString("  list = [\n" + strings.Repeat("    var.a ? \"x\" : \"y\",\n", 500) + "  ]\n}\n")
	realistic := `resource "aws_security_group" "this" {
  dynamic "ingress" {
    for_each = var.rules
    content {
      from_port = ingress.value.port
      cidr_blocks = [for c in lookup(ingress.value, "cidrs", []) : c if !startswith(c, "10.")]
      description = <<-EOT
        %{ for k, v in var.tags ~}
        %{ if v != "" }${k}: ${upper(v)}%{ else }${k}%{ endif }
        %{ endfor ~}
      EOT
    }
  }
  tags = merge(var.tags, { Name = "${var.name}-${local.env == "prod" ? "p" : "np"}" })
}
`
	tests := []struct {
		file, src string
		ok        bool
	}{
		{"ok.tf", deep(MaxConfigNesting), true},
		{"deep.tf", deep(MaxConfigNesting + 1), false},
		{"ok.tf", chain(MaxConfigNesting), true},
		{"chain.tf", chain(MaxConfigNesting + 1), false},
		{"long.tf", long.String(), true},
		{"ifs.tf", `locals { x = "` + strings.Repeat(`%{~ if "${a}" ~}`, MaxConfigNesting) + "\" }\n", false},
		{"fors.tf", "locals { x = <<EOT\n" + strings.Repeat("%{ for v in l }", MaxConfigNesting) + "\nEOT\n}\n", false},
		{"directives.tf", `locals { x = "` + strings.Repeat("%{~ if a ~}b%{~ else ~}c%{~ endif ~}%{ for v in l }${v}%{ endfor }", 200) + "\" }\n", true},
		{"realistic.tf", realistic, true},
		{"ok.tf.json", strings.Repeat("[", MaxConfigNesting) + strings.Repeat("]", MaxConfigNesting), true},
		{"deep.tf.json", strings.Repeat("[", MaxConfigNesting+1) + strings.Repeat("]", MaxConfigNesting+1), false},
		{"template.tf.json", `{"output": {"x": {"value": "${` + strings.Repeat("(", MaxConfigNesting) + `1` + strings.Repeat(")", MaxConfigNesting) + `}"}}}`, false},
		{"realistic.tf.json", `{"resource": {"aws_s3_bucket": {"b": {"bucket": "${var.prefix}-%{ if var.x }a%{ else }b%{ endif }", "tags": {"Name": "${lower(var.name)}"}}}}}`, true},
	}
	for _, tt := range tests {
		var err error
		if strings.HasSuffix(tt.file, ".json") {
			err = checkJSONNesting([]byte(tt.src), tt.file)
		} else {
			err = checkHCLNesting([]byte(tt.src), tt.file)
		}
		if (err == nil) != tt.ok {
			t.Errorf("%s (%d bytes): err = %v, want ok %v", tt.file, len(tt.src), err, tt.ok)
		}
	}
}

// TestPublishRealisticModuleUnderLimits checks that every limit leaves a
// real module alone.
func TestPublishRealisticModuleUnderLimits(t *testing.T) {
	e := newPublishEnv(t)
	files := map[string]string{}
	for k, v := range realisticModule {
		files[k] = v
	}
	files["extra.tf.json"] = `{"variable": {"json_var": {"type": "string", "default": "${upper(\"x\")}"}}}`
	res, err := publishFiles(t, e, t.Context(), "real", files)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	var md Metadata
	if err := json.Unmarshal(res.Version.Metadata, &md); err != nil || len(md.Root.Inputs) != 5 || len(md.Examples) != 2 {
		t.Errorf("metadata %s (%v), want 5 root inputs and 2 examples", res.Version.Metadata, err)
	}
}

func TestPublishRefusesTooMuchConfiguration(t *testing.T) {
	e := newPublishEnv(t)
	pad := func(n int) string { return strings.Repeat("#", n-1) + "\n" } // compresses to almost nothing
	// At the limit: accepted.
	if _, err := publishFiles(t, e, t.Context(), "full", map[string]string{"main.tf": mainTF, "pad.tf": pad(MaxConfigBytes - len(mainTF))}); err != nil {
		t.Fatalf("Publish of exactly %d bytes of configuration: %v", MaxConfigBytes, err)
	}
	// One byte more, spread over the root, a submodule and an example.
	third := (MaxConfigBytes - len(mainTF)) / 3
	files := map[string]string{
		"main.tf":                mainTF,
		"pad.tf":                 pad(third),
		"modules/a/pad.tf":       pad(third),
		"examples/b/pad.tf.json": "{}" + strings.Repeat(" ", MaxConfigBytes-len(mainTF)-2*third-2+1),
	}
	_, err := publishFiles(t, e, t.Context(), "over", files)
	if !registry.IsKind(err, registry.TooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("total %d bytes", MaxConfigBytes+1)) {
		t.Fatalf("Publish = %v, want TooLarge with the total", err)
	}
	assertNotStored(t, e, "over")

	// The probe's shape: many small variables (checked by Inspect directly;
	// its archive would pass the test publisher's archive limit only just).
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() <= MaxConfigBytes; i++ {
		fmt.Fprintf(&b, "variable \"v%d\" {}\n", i)
	}
	writeTree(t, dir, map[string]string{"main.tf": b.String()})
	if _, err := Inspect(dir); !registry.IsKind(err, registry.TooLarge) {
		t.Fatalf("Inspect of %d bytes of variables = %v, want TooLarge", b.Len(), err)
	}
}

func TestDiagnosticsCapped(t *testing.T) {
	e := newPublishEnv(t)
	files := map[string]string{"main.tf": mainTF}
	for i := range 3 * MaxDiagnostics {
		files[fmt.Sprintf("broken%03d.tf", i)] = "resource \"x\" {\n"
	}
	res, err := publishFiles(t, e, t.Context(), "broken", files)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	var md Metadata
	if err := json.Unmarshal(res.Version.Metadata, &md); err != nil {
		t.Fatal(err)
	}
	for _, ds := range [][]string{res.Warnings, md.Diagnostics} {
		if len(ds) != MaxDiagnostics+1 {
			t.Fatalf("%d diagnostics, want %d and a count of the rest", len(ds), MaxDiagnostics+1)
		}
		m := regexp.MustCompile(`^\.\.\. and (\d+) more$`).FindStringSubmatch(ds[MaxDiagnostics])
		var more int
		if m != nil {
			fmt.Sscan(m[1], &more)
		}
		if more < 2*MaxDiagnostics {
			t.Errorf("last diagnostic %q, want it to count at least %d more", ds[MaxDiagnostics], 2*MaxDiagnostics)
		}
	}
}

func TestPublishRefusesHugeMetadata(t *testing.T) {
	e := newPublishEnv(t)
	var b strings.Builder
	desc := strings.Repeat("d", 1000)
	n := 0
	for ; b.Len() < MaxMetadataBytes+MaxMetadataBytes/2; n++ {
		fmt.Fprintf(&b, "variable \"v%d\" {\n  description = %q\n}\n", n, desc)
	}
	if b.Len() > MaxConfigBytes {
		t.Fatalf("test configuration of %d bytes exceeds MaxConfigBytes", b.Len())
	}
	_, err := publishFiles(t, e, t.Context(), "huge", map[string]string{"main.tf": b.String()})
	if !registry.IsKind(err, registry.TooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("%d inputs", n)) {
		t.Fatalf("Publish = %v, want TooLarge counting %d inputs", err, n)
	}
	assertNotStored(t, e, "huge")
}

// TestInspectBudget checks that a Publisher's extraction waits for its
// share of MaxInspectBytes (and gives up with its context), and that the
// configuration bytes extracted at once never exceed MaxInspectBytes while
// small modules share it.
func TestInspectBudget(t *testing.T) {
	e := newPublishEnv(t)
	ins := e.pub.ins
	if err := ins.budget.Acquire(t.Context(), MaxInspectBytes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := publishFiles(t, e, ctx, "waits", map[string]string{"main.tf": mainTF})
	ins.budget.Release(MaxInspectBytes)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with the budget spent and a cancelled context = %v, want context.Canceled", err)
	}
	assertNotStored(t, e, "waits")
	small := t.TempDir()
	writeTree(t, small, realisticModule)
	if _, err := ins.inspect(ctx, small); err != nil {
		t.Fatalf("inspect with room in the budget and a cancelled context: %v", err)
	}
	if _, err := publishFiles(t, e, t.Context(), "waits", map[string]string{"main.tf": mainTF}); err != nil {
		t.Fatalf("Publish with room in the budget: %v", err)
	}

	// Modules of 60% of the budget each must run one at a time; small
	// ones together.
	large := t.TempDir()
	// One long comment: its bytes count, yet it lexes as one token.
	writeTree(t, large, map[string]string{"main.tf": mainTF + "# " + strings.Repeat("x", MaxInspectBytes*6/10) + "\n"})
	var inFlight, most atomic.Int64
	ins.hook = func(n int64) {
		cur := inFlight.Add(n)
		defer inFlight.Add(-n)
		for {
			m := most.Load()
			if cur <= m || most.CompareAndSwap(m, cur) {
				break
			}
		}
		time.Sleep(time.Millisecond) // let the others reach the budget
	}
	var wg sync.WaitGroup
	for i := range 6 {
		dir, rounds := small, 3
		if i < 2 {
			dir, rounds = large, 1
		}
		wg.Go(func() {
			for range rounds {
				if _, err := ins.inspect(t.Context(), dir); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := most.Load(); got > MaxInspectBytes {
		t.Errorf("%d configuration bytes were extracted at once, more than MaxInspectBytes (%d)", got, MaxInspectBytes)
	}
	if most.Load() < MaxInspectBytes*6/10 {
		t.Errorf("the largest extraction held %d bytes, want the large module's share", most.Load())
	}
}
