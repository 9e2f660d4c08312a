package modules

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// realisticModule is shaped like a typical network module.
var realisticModule = map[string]string{
	"README.md": "# AWS network\n\n[![CI](https://ci.example/badge.svg)](https://ci.example)\n\n" +
		"Creates a [VPC](https://docs.example/vpc) with public and\nprivate subnets.\n\n## Usage\n\n```hcl\nmodule \"net\" {}\n```\n",
	"versions.tf": `terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 6.0"
    }
    random = {
      source = "hashicorp/random"
    }
  }
}
`,
	"variables.tf": `variable "cidr" {
  description = "The IPv4 CIDR block of the VPC."
  type        = string
}

variable "azs" {
  description = "Availability zones."
  type        = list(string)
  default     = ["eu-west-1a", "eu-west-1b"]
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "db_password" {
  type      = string
  sensitive = true
  default   = null
}
`,
	"main.tf": `resource "aws_vpc" "this" {
  cidr_block = var.cidr
  tags       = var.tags
}

resource "aws_subnet" "private" {
  count      = length(var.azs)
  vpc_id     = aws_vpc.this.id
  cidr_block = cidrsubnet(var.cidr, 8, count.index)
}

module "labels" {
  source  = "trove.test/acme/labels/null"
  version = "~> 1.0"
}
`,
	"outputs.tf": `output "vpc_id" {
  description = "The ID of the VPC."
  value       = aws_vpc.this.id
}

output "secret" {
  value     = var.db_password
  sensitive = true
}
`,
	"modules/subnet/main.tf": `variable "vpc_id" {
  type = string
}

output "id" {
  value = var.vpc_id
}
`,
	"modules/subnet/README.md":    "# Subnet\n\nOne subnet.\n",
	"modules/docs-only/README.md": "Nothing to see.\n",
	"examples/complete/main.tf": `module "network" {
  source = "../.."
  cidr   = "10.0.0.0/16"
}
`,
	"examples/broken/main.tf": "resource \"x\" {\n",
	"files/policy.json":       "{}",
}

func TestInspectRealisticModule(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, realisticModule)
	var buf bytes.Buffer
	if _, err := PackArchive(&buf, dir); err != nil {
		t.Fatal(err)
	}
	_, stage, err := check(t, buf.Bytes(), Limits{})
	if err != nil {
		t.Fatalf("CheckArchive: %v", err)
	}
	md, err := Inspect(stage)
	if err != nil {
		t.Fatal(err)
	}

	root := md.Root
	if root.Path != "" || root.Name != "" || root.Empty || !strings.HasPrefix(root.Readme, "# AWS network") {
		t.Errorf("root path %q name %q empty %v readme %q", root.Path, root.Name, root.Empty, root.Readme)
	}
	wantInputs := []Input{
		{Name: "azs", Type: "list(string)", Description: "Availability zones.", Default: json.RawMessage(`["eu-west-1a","eu-west-1b"]`)},
		{Name: "cidr", Type: "string", Description: "The IPv4 CIDR block of the VPC.", Default: json.RawMessage(`null`), Required: true},
		{Name: "db_password", Type: "string", Default: json.RawMessage(`null`), Sensitive: true},
		{Name: "tags", Type: "map(string)", Default: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(root.Inputs, wantInputs) {
		t.Errorf("inputs:\n got  %s\n want %s", mustJSON(root.Inputs), mustJSON(wantInputs))
	}
	wantOutputs := []Output{{Name: "secret", Sensitive: true}, {Name: "vpc_id", Description: "The ID of the VPC."}}
	if !reflect.DeepEqual(root.Outputs, wantOutputs) {
		t.Errorf("outputs: got %+v, want %+v", root.Outputs, wantOutputs)
	}
	wantProviders := []ProviderDependency{
		{Name: "aws", Source: "hashicorp/aws", Version: ">= 5.0, < 6.0"},
		{Name: "random", Source: "hashicorp/random"},
	}
	if !reflect.DeepEqual(root.ProviderDependencies, wantProviders) {
		t.Errorf("providers: got %+v, want %+v", root.ProviderDependencies, wantProviders)
	}
	if !reflect.DeepEqual(root.RequiredCore, []string{">= 1.5"}) {
		t.Errorf("required_core = %q", root.RequiredCore)
	}
	if want := []ModuleDependency{{Name: "labels", Source: "trove.test/acme/labels/null", Version: "~> 1.0"}}; !reflect.DeepEqual(root.Dependencies, want) {
		t.Errorf("dependencies = %+v, want %+v", root.Dependencies, want)
	}
	if want := []Resource{{Name: "private", Type: "aws_subnet"}, {Name: "this", Type: "aws_vpc"}}; !reflect.DeepEqual(root.Resources, want) {
		t.Errorf("resources = %+v, want %+v", root.Resources, want)
	}

	var subs []string
	for _, s := range md.Submodules {
		subs = append(subs, s.Path)
	}
	if strings.Join(subs, ",") != "modules/docs-only,modules/subnet" {
		t.Fatalf("submodules = %q", subs)
	}
	if d := md.Submodules[0]; !d.Empty || d.Name != "docs-only" || d.Readme != "Nothing to see.\n" {
		t.Errorf("docs-only submodule = %+v, want empty with its README", d)
	}
	if s := md.Submodules[1]; s.Empty || s.Name != "subnet" || len(s.Inputs) != 1 || s.Inputs[0].Name != "vpc_id" || len(s.Outputs) != 1 || s.Readme == "" {
		t.Errorf("subnet submodule = %+v", s)
	}
	if len(md.Examples) != 2 || md.Examples[0].Path != "examples/broken" || md.Examples[1].Path != "examples/complete" {
		t.Fatalf("examples = %+v", md.Examples)
	}
	if deps := md.Examples[1].Dependencies; len(deps) != 1 || deps[0].Source != "../.." {
		t.Errorf("complete example dependencies = %+v", deps)
	}
	if len(md.Diagnostics) == 0 || !strings.Contains(md.Diagnostics[0], "examples/broken/main.tf") {
		t.Errorf("diagnostics = %q, want the syntax error of examples/broken", md.Diagnostics)
	}
	if got := Description(root.Readme); got != "Creates a VPC with public and private subnets." {
		t.Errorf("Description = %q", got)
	}
}

func TestDescription(t *testing.T) {
	tests := map[string]string{
		"":               "",
		"# Title only\n": "",
		"Plain first line.\nSecond line.\n\nNext paragraph.": "Plain first line. Second line.",
		"<p align=\"center\"><img src=x></p>\n\nAfter HTML.": "After HTML.",
		"```\ncode first\n```\nText.":                        "Text.",
		"| a | b |\n|---|---|\n\nAfter table.":               "After table.",
		"Has \x1b[31mcolour\x1b[0m codes.":                   "Has [31mcolour [0m codes.",
		strings.Repeat("word ", 100):                         strings.Repeat("word ", 59) + "word…",
	}
	for in, want := range tests {
		if got := Description(in); got != want {
			t.Errorf("Description(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
