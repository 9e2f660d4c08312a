package release_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

const (
	d1 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	d2 = "a591a6d40bf420404a011733cfb7b190d62c65bf0bcda32b57b277d9ad9f146e"
	d3 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
)

// wantErr checks err's kind and that its message contains every part of want.
func wantErr(t *testing.T, err error, kind registry.Kind, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v error containing %q", kind, want)
	}
	if registry.KindOf(err) != kind {
		t.Fatalf("got %v error %q, want kind %v", registry.KindOf(err), err, kind)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
	t.Log(err)
}

func TestParseSHA256SUMS(t *testing.T) {
	goreleaser := d1 + "  terraform-provider-example_1.0.0_darwin_arm64.zip\n" +
		d2 + "  terraform-provider-example_1.0.0_linux_amd64.zip\n" +
		d3 + "  terraform-provider-example_1.0.0_manifest.json\n"
	valid := map[string][]release.Sum{
		goreleaser: {
			{d1, "terraform-provider-example_1.0.0_darwin_arm64.zip"},
			{d2, "terraform-provider-example_1.0.0_linux_amd64.zip"},
			{d3, "terraform-provider-example_1.0.0_manifest.json"},
		},
		d1 + "  a.zip":              {{d1, "a.zip"}}, // no final newline
		d1 + "  a.zip\n":            {{d1, "a.zip"}},
		d1 + "  ünïcode.zip\n":      {{d1, "ünïcode.zip"}},
		d1 + "  a\n" + d1 + "  b\n": {{d1, "a"}, {d1, "b"}}, // same digest twice is fine
	}
	for input, want := range valid {
		t.Run("valid "+input[64:], func(t *testing.T) {
			got, err := release.ParseSHA256SUMS([]byte(input))
			if err != nil {
				t.Fatalf("ParseSHA256SUMS: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}

	line := d1 + "  a.zip\n"
	invalid := map[string]struct {
		kind registry.Kind
		want []string
	}{
		"":                                      {registry.Invalid, []string{"SHA256SUMS is empty"}},
		"\n":                                    {registry.Invalid, []string{"line 1", "blank line"}},
		line + "\n":                             {registry.Invalid, []string{"line 2", "blank line"}},
		"\n" + line:                             {registry.Invalid, []string{"line 1", "blank line"}},
		line + "\n" + d2 + "  b.zip\n":          {registry.Invalid, []string{"line 2", "blank line"}},
		line + "   \n":                          {registry.Invalid, []string{"line 2", "blank line"}},
		d1 + " *a.zip\n":                        {registry.Invalid, []string{"line 1", "sha256sum -b", "without -b"}},
		d1 + "  a.zip\r\n":                      {registry.Invalid, []string{"line 1", "CR LF"}},
		line + d2 + "  b.zip\r\n":               {registry.Invalid, []string{"line 2", "CR LF"}},
		strings.ToUpper(d1) + "  a.zip\n":       {registry.Invalid, []string{"line 1", "upper-case"}},
		d1 + " a.zip\n":                         {registry.Invalid, []string{"line 1", "exactly two spaces"}},
		d1 + "\ta.zip\n":                        {registry.Invalid, []string{"line 1", "exactly two spaces"}},
		d1 + "   a.zip\n":                       {registry.Invalid, []string{"line 1", "white space"}},
		d1 + "  a.zip \n":                       {registry.Invalid, []string{"line 1", "white space"}},
		d1 + "  my file.zip\n":                  {registry.Invalid, []string{"line 1", "white space"}},
		d1[:63] + "  a.zip\n":                   {registry.Invalid, []string{"line 1", "64-digit"}},
		"g" + d1[1:] + "  a.zip\n":              {registry.Invalid, []string{"line 1", "64-digit"}},
		d1 + d1[:8] + "  a.zip\n":               {registry.Invalid, []string{"line 1", "exactly two spaces"}},
		d1 + "\n":                               {registry.Invalid, []string{"line 1", "no file name"}},
		d1 + "  \n":                             {registry.Invalid, []string{"line 1", "file name is empty"}},
		line + d2 + "  a.zip\n":                 {registry.Invalid, []string{"line 2", "already listed on line 1"}},
		d1 + "  dist/a.zip\n":                   {registry.Invalid, []string{"line 1", "path separator"}},
		d1 + "  dist\\a.zip\n":                  {registry.Invalid, []string{"line 1", "path separator"}},
		d1 + "  a\x01.zip\n":                    {registry.Invalid, []string{"line 1", "control character"}},
		d1 + "  a\x7f.zip\n":                    {registry.Invalid, []string{"line 1", "control character"}},
		d1 + "  \xff.zip\n":                     {registry.Invalid, []string{"line 1", "UTF-8"}},
		d1 + "  ..\n":                           {registry.Invalid, []string{"line 1", "not a file"}},
		"\\" + d1 + "  a\\nb.zip\n":             {registry.Invalid, []string{"line 1", "64-digit"}}, // sha256sum's escaped-name form
		"\xef\xbb\xbf" + line:                   {registry.Invalid, []string{"line 1", "64-digit"}}, // byte order mark
		strings.Repeat(line, 1<<20/len(line)+1): {registry.TooLarge, []string{"larger than 1 MiB"}},
	}
	for input, tc := range invalid {
		name := input
		if len(name) > 100 {
			name = name[:100]
		}
		t.Run("invalid "+name, func(t *testing.T) {
			got, err := release.ParseSHA256SUMS([]byte(input))
			wantErr(t, err, tc.kind, tc.want...)
			if got != nil {
				t.Errorf("got sums %v along with the error", got)
			}
		})
	}
}

func TestParsePackageFilename(t *testing.T) {
	valid := map[string]release.PackageName{
		"terraform-provider-example_1.2.3_linux_amd64.zip":            {"example", "1.2.3", "linux", "amd64"},
		"terraform-provider-example_0.0.1_darwin_arm64.zip":           {"example", "0.0.1", "darwin", "arm64"},
		"terraform-provider-example_1.2.3_windows_386.zip":            {"example", "1.2.3", "windows", "386"},
		"terraform-provider-my-cloud_1.2.3-beta.1_linux_arm.zip":      {"my-cloud", "1.2.3-beta.1", "linux", "arm"},
		"terraform-provider-x_1.0.0-rc-1+build.5_freebsd_amd64.zip":   {"x", "1.0.0-rc-1+build.5", "freebsd", "amd64"},
		"terraform-provider-example2_10.20.30+meta_openbsd_amd64.zip": {"example2", "10.20.30+meta", "openbsd", "amd64"},
	}
	for name, want := range valid {
		t.Run(name, func(t *testing.T) {
			got, err := release.ParsePackageFilename(name)
			if err != nil {
				t.Fatalf("ParsePackageFilename: %v", err)
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}

	invalid := map[string]string{
		"":                              "want terraform-provider-<type>",
		"terraform-provider-.zip":       "want terraform-provider-<type>",
		"example_1.2.3_linux_amd64.zip": "want terraform-provider-<type>",
		"terraform-provider-example_1.2.3_linux_amd64.tar.gz":   "want terraform-provider-<type>",
		"terraform-provider-example_1.2.3_linux.zip":            "want terraform-provider-<type>",
		"terraform-provider-example_1.2.3_linux_amd64_v2.zip":   "want terraform-provider-<type>",
		"terraform-provider-my_cloud_1.2.3_linux_amd64.zip":     "want terraform-provider-<type>",
		"terraform-provider-example_1.2.3_beta_linux_amd64.zip": "want terraform-provider-<type>",
		"terraform-provider-_1.2.3_linux_amd64.zip":             "provider type is empty",
		"terraform-provider-Example_1.2.3_linux_amd64.zip":      "lower case",
		"terraform-provider-terraform-x_1.2.3_linux_amd64.zip":  "may not start with",
		"terraform-provider-ex--ample_1.2.3_linux_amd64.zip":    "invalid provider type",
		"terraform-provider-example_v1.2.3_linux_amd64.zip":     "drop the leading",
		"terraform-provider-example_1.2_linux_amd64.zip":        "MAJOR.MINOR.PATCH",
		"terraform-provider-example_01.2.3_linux_amd64.zip":     "MAJOR.MINOR.PATCH",
		"terraform-provider-example_1.2.3_Linux_amd64.zip":      "invalid operating system",
		"terraform-provider-example_1.2.3_linux_.zip":           "invalid architecture",
		"terraform-provider-example_1.2.3_linux_amd-64.zip":     "invalid architecture",
		"dist/terraform-provider-example_1.2.3_linux_amd64.zip": "want terraform-provider-<type>",
	}
	for name, want := range invalid {
		t.Run(name, func(t *testing.T) {
			got, err := release.ParsePackageFilename(name)
			wantErr(t, err, registry.Invalid, want)
			if got != (release.PackageName{}) {
				t.Errorf("got %+v along with the error", got)
			}
		})
	}
}

func TestParseManifest(t *testing.T) {
	valid := map[string][]string{
		"": {"5.0"},
		`{"version":1,"metadata":{"protocol_versions":["5.0"]}}`:                                         {"5.0"},
		`{"version":1,"metadata":{"protocol_versions":["6.0"]}}`:                                         {"6.0"},
		`{"version":1,"metadata":{"protocol_versions":["5.0","6.0"]}}`:                                   {"5.0", "6.0"},
		`{"version":1,"metadata":{"protocol_versions":["4.0","5.1"]}}`:                                   {"4.0", "5.1"},
		`{"version":1,"metadata":{"protocol_versions":[]}}`:                                              {"5.0"},
		`{"version":1,"metadata":{}}`:                                                                    {"5.0"},
		`{"version":1}`:                                                                                  {"5.0"},
		"{\n  \"version\": 1,\n  \"metadata\": {\"protocol_versions\": [\"6.0\"], \"extra\": true}\n}\n": {"6.0"},
	}
	for input, want := range valid {
		t.Run("valid "+input, func(t *testing.T) {
			got, err := release.ParseManifest([]byte(input))
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		got, err := release.ParseManifest(nil)
		if err != nil || !reflect.DeepEqual(got, []string{"5.0"}) {
			t.Errorf("ParseManifest(nil) = %q, %v; want [5.0]", got, err)
		}
	})

	many := `{"version":1,"metadata":{"protocol_versions":["5.0"` + strings.Repeat(`,"5.0"`, 16) + `]}}`
	invalid := map[string]struct {
		kind registry.Kind
		want string
	}{
		`{"version":2,"metadata":{"protocol_versions":["5.0"]}}`: {registry.Invalid, "version 2 is not supported"},
		`{"metadata":{"protocol_versions":["5.0"]}}`:             {registry.Invalid, `no "version"`},
		`{"version":"1"}`: {registry.Invalid, "not of the form"},
		`[1]`:             {registry.Invalid, "not of the form"},
		`{"version":1`:    {registry.Invalid, "not of the form"},
		`{"version":1}{}`: {registry.Invalid, "data after"},
		`{"version":1,"metadata":{"protocol_versions":"5.0"}}`:         {registry.Invalid, "not of the form"},
		`{"version":1,"metadata":{"protocol_versions":["5"]}}`:         {registry.Invalid, "not MAJOR.MINOR"},
		`{"version":1,"metadata":{"protocol_versions":["5.0.0"]}}`:     {registry.Invalid, "not MAJOR.MINOR"},
		`{"version":1,"metadata":{"protocol_versions":["v5.0"]}}`:      {registry.Invalid, "not MAJOR.MINOR"},
		`{"version":1,"metadata":{"protocol_versions":["05.0"]}}`:      {registry.Invalid, "not MAJOR.MINOR"},
		`{"version":1,"metadata":{"protocol_versions":[""]}}`:          {registry.Invalid, "not MAJOR.MINOR"},
		`{"version":1,"metadata":{"protocol_versions":["4.0"]}}`:       {registry.Invalid, "neither 5.x nor 6.x"},
		`{"version":1,"metadata":{"protocol_versions":["7.0","4.0"]}}`: {registry.Invalid, "neither 5.x nor 6.x"},
		`{"version":1,"metadata":{"protocol_versions":["5.0","5.0"]}}`: {registry.Invalid, "twice"},
		many: {registry.Invalid, "at most 16"},
		`{"version":1,"pad":"` + strings.Repeat("x", release.MaxManifestBytes) + `"}`: {registry.TooLarge, "larger than 64 KiB"},
	}
	for input, tc := range invalid {
		name := input
		if len(name) > 100 {
			name = name[:100]
		}
		t.Run("invalid "+name, func(t *testing.T) {
			got, err := release.ParseManifest([]byte(input))
			wantErr(t, err, tc.kind, tc.want)
			if got != nil {
				t.Errorf("got %q along with the error", got)
			}
		})
	}
}

// FuzzParseSHA256SUMS checks that whatever ParseSHA256SUMS accepts is read
// the same way by the clients, which split each line on white space, and
// renders back to the very bytes it was given.
func FuzzParseSHA256SUMS(f *testing.F) {
	for _, seed := range []string{
		d1 + "  terraform-provider-example_1.0.0_linux_amd64.zip\n" + d2 + "  terraform-provider-example_1.0.0_manifest.json\n",
		d1 + "  a.zip",
		d1 + " *a.zip\n",
		d1 + "  a.zip\r\n",
		d1 + "  a.zip\n\n",
		strings.ToUpper(d1) + "  a.zip\n",
		d1 + "  a.zip\n" + d1 + "  a.zip\n",
		"",
		"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := release.ParseSHA256SUMS(data)
		if err != nil {
			if k := registry.KindOf(err); k != registry.Invalid && k != registry.TooLarge {
				t.Fatalf("error of kind %v: %v", k, err)
			}
			return
		}
		var rendered bytes.Buffer
		for _, s := range sums {
			rendered.WriteString(s.Digest + "  " + s.Filename + "\n")
		}
		if !bytes.Equal(rendered.Bytes(), data) && !bytes.Equal(rendered.Bytes(), append(data, '\n')) {
			t.Fatalf("accepted %q but it renders as %q", data, rendered.Bytes())
		}
		lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
		if len(lines) != len(sums) {
			t.Fatalf("accepted %d lines as %d sums", len(lines), len(sums))
		}
		seen := map[string]bool{}
		for i, line := range lines {
			fields := bytes.Fields(line)
			if len(fields) != 2 || string(fields[0]) != sums[i].Digest || string(fields[1]) != sums[i].Filename {
				t.Fatalf("line %d %q: clients read %q, Trove %+v", i+1, line, fields, sums[i])
			}
			if len(sums[i].Digest) != 64 || strings.ToLower(sums[i].Digest) != sums[i].Digest || seen[sums[i].Filename] {
				t.Fatalf("accepted bad sum %+v", sums[i])
			}
			seen[sums[i].Filename] = true
		}
	})
}

func TestCheckSums(t *testing.T) {
	sums := []release.Sum{
		{Digest: d1, Filename: "terraform-provider-example_1.0.0_linux_amd64.zip"},
		{Digest: d2, Filename: "terraform-provider-example_1.0.0_manifest.json"},
		{Digest: d3, Filename: "terraform-provider-example_1.0.0_docs.tar.gz"},
	}
	l, err := release.CheckSums(sums, "example", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Digests) != 3 || len(l.Packages) != 1 || l.Packages[sums[0].Filename].Arch != "amd64" || l.Docs != sums[2].Filename {
		t.Errorf("CheckSums = %+v", l)
	}
	for name, c := range map[string]struct {
		sum  release.Sum
		want string
	}{
		"another version":       {release.Sum{Digest: d2, Filename: "terraform-provider-example_2.0.0_darwin_arm64.zip"}, "not a package of example 1.0.0"},
		"another provider":      {release.Sum{Digest: d2, Filename: "terraform-provider-other_1.0.0_darwin_arm64.zip"}, "not a package of example 1.0.0"},
		"a zip of another name": {release.Sum{Digest: d2, Filename: "example.zip"}, "invalid package file name"},
		"other documentation":   {release.Sum{Digest: d2, Filename: "terraform-provider-example_0.9.0_docs.zip"}, "not the documentation of example 1.0.0"},
		"second documentation":  {release.Sum{Digest: d2, Filename: "terraform-provider-example_1.0.0_docs.zip"}, "two documentation archives"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := release.CheckSums(append(sums[:3:3], c.sum), "example", "1.0.0")
			wantErr(t, err, registry.Invalid, c.want)
		})
	}
}

func TestCheckProtocols(t *testing.T) {
	if got, err := release.CheckProtocols(nil); err != nil || !reflect.DeepEqual(got, []string{"5.0"}) {
		t.Errorf("CheckProtocols(nil) = %v, %v; want [5.0]", got, err)
	}
	if got, err := release.CheckProtocols([]string{"6.0", "5.1"}); err != nil || !reflect.DeepEqual(got, []string{"6.0", "5.1"}) {
		t.Errorf("CheckProtocols = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"4.0"}, {"5"}, {"5.0", "5.0"}, {"5.0\n"}, {"v5.0"}} {
		if _, err := release.CheckProtocols(bad); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("CheckProtocols(%q) = %v, want Invalid", bad, err)
		}
	}
}
