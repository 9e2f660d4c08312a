package modules

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"trove.dev/trove/internal/registry"
)

// Metadata is what Trove shows about a module version besides its
// archive, extracted at publish time. It is stored as JSON (its field
// tags are its stored and served form) and shaped like the module details
// of the public registry API: the root module, then its submodules
// (modules/*) and examples (examples/*), each with its own README, inputs,
// outputs and requirements.
type Metadata struct {
	Root       ModuleInfo   `json:"root"`
	Submodules []ModuleInfo `json:"submodules"`
	Examples   []ModuleInfo `json:"examples"`
	// Diagnostics are problems terraform-config-inspect reported, as
	// "file:line: summary: detail". They do not stop a publish: Terraform
	// itself judges the configuration when it uses it. At most
	// MaxDiagnostics are kept, then a last "... and N more".
	Diagnostics []string `json:"diagnostics,omitempty"`
}

// ModuleInfo describes one module directory of an archive.
type ModuleInfo struct {
	Path            string `json:"path"` // "" for the root, else e.g. "modules/vpc"
	Name            string `json:"name"` // the directory's name; "" for the root
	Readme          string `json:"readme"`
	ReadmeTruncated bool   `json:"readme_truncated,omitempty"`
	// Empty is true when the directory holds no configuration file (for
	// example a submodule directory with only a README).
	Empty                bool                 `json:"empty"`
	Inputs               []Input              `json:"inputs"`
	Outputs              []Output             `json:"outputs"`
	RequiredCore         []string             `json:"required_core"` // terraform { required_version } constraints
	ProviderDependencies []ProviderDependency `json:"provider_dependencies"`
	Dependencies         []ModuleDependency   `json:"dependencies"` // module calls
	Resources            []Resource           `json:"resources"`
}

// Input is a variable of a module.
type Input struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
	// Default is the default value as JSON, or null for none.
	Default   json.RawMessage `json:"default"`
	Required  bool            `json:"required"`
	Sensitive bool            `json:"sensitive"`
}

// Output is an output value of a module.
type Output struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Sensitive   bool   `json:"sensitive"`
}

// ProviderDependency is a provider a module requires.
type ProviderDependency struct {
	Name    string `json:"name"`    // the local name, e.g. "aws"
	Source  string `json:"source"`  // e.g. "hashicorp/aws"; "" when implied
	Version string `json:"version"` // the constraints joined with ", "; "" for any
}

// ModuleDependency is a module a module calls.
type ModuleDependency struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Version string `json:"version"`
}

// Resource is a managed resource a module declares.
type Resource struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Inspect reads the module files CheckArchive staged in dir and returns their
// metadata. It reads nothing but dir, through an os.Root, so no name can
// reach outside it. It refuses, before parsing any, configuration files
// larger or more deeply nested than MaxConfigBytes and MaxConfigNesting
// allow and keeps at most MaxDiagnostics diagnostics. (A Publisher also
// bounds the bytes its extractions parse at once, MaxInspectBytes.)
func Inspect(dir string) (Metadata, error) {
	return newInspector().inspect(context.Background(), dir)
}

// inspect is Inspect within the budget of in, giving up when ctx is done
// while it waits for its share.
func (in *inspector) inspect(ctx context.Context, dir string) (Metadata, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Metadata{}, registry.Wrap(registry.Internal, err, "opening the staged module")
	}
	defer root.Close()
	fsys := root.FS()
	dirs := configDirs(fsys)
	files, total, err := sizeConfigFiles(fsys, dirs)
	if err != nil {
		return Metadata{}, err
	}
	// Lexing and parsing take memory in proportion to the bytes: wait
	// for this module's share of the budget first.
	release, err := in.acquire(ctx, total)
	if err != nil {
		return Metadata{}, err
	}
	defer release()
	if in.hook != nil {
		in.hook(total)
	}
	if err := checkConfigFiles(fsys, files); err != nil {
		return Metadata{}, err
	}
	md := Metadata{Submodules: []ModuleInfo{}, Examples: []ModuleInfo{}}
	var diags diagList
	for _, d := range dirs { // the root, then modules/*, then examples/*
		info := inspectDir(fsys, d, &diags)
		switch {
		case d == ".":
			md.Root = info
		case strings.HasPrefix(d, "modules/"):
			md.Submodules = append(md.Submodules, info)
		default:
			md.Examples = append(md.Examples, info)
		}
	}
	md.Diagnostics = diags.list
	if diags.more > 0 {
		md.Diagnostics = append(md.Diagnostics, fmt.Sprintf("... and %d more", diags.more))
	}
	return md, nil
}

// diagList collects the first MaxDiagnostics diagnostics and counts the
// others.
type diagList struct {
	list []string
	more int
}

func (l *diagList) add(msg string) {
	if len(l.list) < MaxDiagnostics {
		l.list = append(l.list, clean(msg, 1024))
	} else {
		l.more++
	}
}

// encodeMetadata returns md as stored, refusing it when it is larger than
// MaxMetadataBytes.
func encodeMetadata(md Metadata) ([]byte, error) {
	b, err := json.Marshal(md)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "encoding module metadata")
	}
	if len(b) <= MaxMetadataBytes {
		return b, nil
	}
	var dirs, inputs, outputs, resources, calls, readme int
	for _, m := range append(append([]ModuleInfo{md.Root}, md.Submodules...), md.Examples...) {
		dirs++
		inputs += len(m.Inputs)
		outputs += len(m.Outputs)
		resources += len(m.Resources)
		calls += len(m.Dependencies)
		readme += len(m.Readme)
	}
	return nil, registry.Errorf(registry.TooLarge,
		"the module's metadata encodes to %d bytes, more than the limit of %d MiB: %d module directories with %d inputs, %d outputs, %d resources, %d module calls and %d bytes of README",
		len(b), MaxMetadataBytes>>20, dirs, inputs, outputs, resources, calls, readme)
}

// ParseMetadata reads module metadata as it is stored and served (what
// Inspect returns, encoded): at most MaxMetadataBytes of one JSON object of
// exactly Metadata's shape, without unknown fields or data after it. The
// web pages and the protocol's module details decode what is stored as a
// Metadata, so metadata of another shape, which no publish writes, is
// refused where it could enter (an air-gap bundle).
func ParseMetadata(data []byte) (Metadata, error) {
	var md Metadata
	if len(data) > MaxMetadataBytes {
		return md, registry.Errorf(registry.TooLarge, "its metadata has %d bytes, more than the limit of %d MiB", len(data), MaxMetadataBytes>>20)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&md); err != nil {
		return md, registry.Errorf(registry.Invalid, "its metadata is not module metadata as Trove extracts it (%s)", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return md, registry.Errorf(registry.Invalid, "its metadata has data after its JSON object")
	}
	return md, nil
}

// inspectDir describes the module directory dir of fsys.
func inspectDir(fsys fs.FS, dir string, diags *diagList) ModuleInfo {
	info := ModuleInfo{
		Inputs: []Input{}, Outputs: []Output{}, RequiredCore: []string{},
		ProviderDependencies: []ProviderDependency{}, Dependencies: []ModuleDependency{}, Resources: []Resource{},
	}
	if dir != "." {
		info.Path, info.Name = dir, path.Base(dir)
	}
	info.Readme, info.ReadmeTruncated = readReadme(fsys, dir)

	tfs := tfconfig.WrapFS(fsys)
	if !tfconfig.IsModuleDirOnFilesystem(tfs, dir) {
		info.Empty = true
		return info
	}
	mod, ds := tfconfig.LoadModuleFromFilesystem(tfs, dir)
	for _, d := range ds {
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Pos != nil {
			msg = fmt.Sprintf("%s:%d: %s", d.Pos.Filename, d.Pos.Line, msg)
		}
		diags.add(msg)
	}
	if mod == nil {
		return info
	}
	for _, v := range mod.Variables {
		in := Input{Name: v.Name, Type: v.Type, Description: v.Description, Required: v.Required, Sensitive: v.Sensitive, Default: json.RawMessage("null")}
		if !v.Required && v.Default != nil {
			if b, err := json.Marshal(v.Default); err == nil {
				in.Default = b
			}
		}
		info.Inputs = append(info.Inputs, in)
	}
	slices.SortFunc(info.Inputs, func(a, b Input) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range mod.Outputs {
		info.Outputs = append(info.Outputs, Output{Name: o.Name, Description: o.Description, Sensitive: o.Sensitive})
	}
	slices.SortFunc(info.Outputs, func(a, b Output) int { return strings.Compare(a.Name, b.Name) })
	info.RequiredCore = append(info.RequiredCore, mod.RequiredCore...)
	for name, req := range mod.RequiredProviders {
		d := ProviderDependency{Name: name}
		if req != nil {
			d.Source, d.Version = req.Source, strings.Join(req.VersionConstraints, ", ")
		}
		info.ProviderDependencies = append(info.ProviderDependencies, d)
	}
	slices.SortFunc(info.ProviderDependencies, func(a, b ProviderDependency) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range mod.ModuleCalls {
		info.Dependencies = append(info.Dependencies, ModuleDependency{Name: c.Name, Source: c.Source, Version: c.Version})
	}
	slices.SortFunc(info.Dependencies, func(a, b ModuleDependency) int { return strings.Compare(a.Name, b.Name) })
	for _, r := range mod.ManagedResources {
		info.Resources = append(info.Resources, Resource{Name: r.Name, Type: r.Type})
	}
	slices.SortFunc(info.Resources, func(a, b Resource) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.Name, b.Name))
	})
	return info
}

// readReadme returns the README.md of dir (any case), cut to
// maxReadmeBytes at a character boundary, and whether it was cut.
func readReadme(fsys fs.FS, dir string) (string, bool) {
	des, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return "", false
	}
	for _, de := range des {
		if de.Type().IsRegular() && isReadme(de.Name()) {
			b, err := fs.ReadFile(fsys, path.Join(dir, de.Name()))
			if err != nil {
				return "", false
			}
			cut := len(b) > maxReadmeBytes
			if cut { // at the start of a character
				n := maxReadmeBytes
				for n > 0 && !utf8.RuneStart(b[n]) {
					n--
				}
				b = b[:n]
			}
			return strings.ToValidUTF8(string(b), "\uFFFD"), cut
		}
	}
	return "", false
}

// maxDescription bounds the one-line description taken from a README.
const maxDescription = 300

// Description returns a one-line summary of a README: its first paragraph
// of prose, skipping headings, badges, HTML, tables and code blocks, with
// Markdown links reduced to their text, cut to 300 characters.
func Description(readme string) string {
	var para []string
	fenced := false
	for line := range strings.Lines(readme) {
		s := strings.TrimSpace(line)
		if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
			fenced = !fenced
			if len(para) > 0 {
				break
			}
			continue
		}
		skip := fenced || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "<") || strings.HasPrefix(s, "|") ||
			strings.HasPrefix(s, "[![") || strings.HasPrefix(s, "![") || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "===")
		if s == "" || skip {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, s)
	}
	return clean(stripLinks(strings.Join(para, " ")), maxDescription)
}

// stripLinks turns [text](url) into text.
func stripLinks(s string) string {
	var b strings.Builder
	for {
		open := strings.Index(s, "[")
		if open < 0 {
			break
		}
		mid := strings.Index(s[open:], "](")
		if mid < 0 {
			break
		}
		end := strings.Index(s[open+mid:], ")")
		if end < 0 {
			break
		}
		b.WriteString(s[:open])
		b.WriteString(s[open+1 : open+mid])
		s = s[open+mid+end+1:]
	}
	b.WriteString(s)
	return b.String()
}

// clean makes s one line of printable text of at most n characters.
func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}
