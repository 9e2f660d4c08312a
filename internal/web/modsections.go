package web

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
)

// moduleSections is what a module version's metadata shows on its page,
// rendered: the root module, submodules and examples with their READMEs
// as HTML, and the diagnostics. It depends on the metadata's bytes alone.
type moduleSections struct {
	hasMetadata bool
	root        moduleSection
	submodules  []moduleSection
	examples    []moduleSection
	diagnostics []string
}

// sectionsCacheBytes bounds the memory of rendered module sections,
// counted in the web UI's budget too.
const sectionsCacheBytes = 16 << 20

// sectionsCacheMaxAge is how long rendered sections are kept: they
// are keyed by the metadata's digest, so they are never stale; the age
// only lets memory go.
const sectionsCacheMaxAge = time.Hour

// sectionsCache keeps the rendered sections of module versions by the
// SHA-256 of their metadata, so that a module page rendered again (every
// pageCacheMaxAge while it is read, for its download counts, and after
// every change to the index) decodes the metadata JSON and renders the
// READMEs' Markdown only when the metadata is new. Keyed by content, an
// entry can never show another version's metadata, and nothing needs
// to drop it on a change.
type sectionsCache = respcache.Cache[[sha256.Size]byte, struct{}, *moduleSections]

func newSectionsCache(now func() time.Time, budget *respcache.Budget) *sectionsCache {
	return respcache.New[[sha256.Size]byte, struct{}, *moduleSections](respcache.Options{
		Name: "web module sections", MaxAge: sectionsCacheMaxAge, Now: now,
		MaxBytes: sectionsCacheBytes, MaxEntryBytes: sectionsCacheBytes / 8, Budget: budget,
	})
}

// moduleSectionsOf returns the rendered sections of metadata (a
// modules.Metadata document; none when empty), from the cache when the
// same bytes were rendered before.
func (s *Service) moduleSectionsOf(ctx context.Context, metadata []byte) (*moduleSections, error) {
	if len(metadata) == 0 {
		return renderSections(nil)
	}
	key := sha256.Sum256(metadata)
	e := s.sections.Lookup(key, struct{}{})
	if s.sections.State(e) != respcache.Expired {
		return e.Value, nil // content-addressed: never stale
	}
	e, err := s.sections.Load(ctx, key, struct{}{}, e, func(context.Context) (respcache.Rendered[*moduleSections], error) {
		secs, err := renderSections(metadata)
		if err != nil {
			return respcache.Rendered[*moduleSections]{}, err
		}
		return respcache.Rendered[*moduleSections]{Value: secs, Size: secs.size()}, nil
	})
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// renderSections decodes metadata and renders its sections.
func renderSections(metadata []byte) (*moduleSections, error) {
	var md modules.Metadata
	secs := &moduleSections{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &md); err != nil {
			return nil, registry.Wrap(registry.Internal, err, "reading the module's metadata")
		}
		secs.hasMetadata = true
	}
	secs.root = section(md.Root, "root", "")
	for i, m := range md.Submodules {
		secs.submodules = append(secs.submodules, section(m, "submodule-"+m.Name, "sub"+strconv.Itoa(i+1)))
	}
	for i, m := range md.Examples {
		secs.examples = append(secs.examples, section(m, "example-"+m.Name, "ex"+strconv.Itoa(i+1)))
	}
	secs.diagnostics = md.Diagnostics
	return secs, nil
}

// size estimates the memory of secs: its READMEs' HTML and twice the
// Markdown and inputs it keeps (the decoded metadata), roughly.
func (secs *moduleSections) size() int64 {
	n := int64(256)
	for _, list := range [][]moduleSection{{secs.root}, secs.submodules, secs.examples} {
		for _, sec := range list {
			n += int64(len(sec.Readme)+2*len(sec.ModuleInfo.Readme)) + 256*int64(len(sec.Inputs)+len(sec.Outputs)+len(sec.Resources)+1)
		}
	}
	for _, d := range secs.diagnostics {
		n += int64(len(d))
	}
	return n
}
