package web

import (
	"context"
	"html/template"
	"net/http"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// docsNav is the navigation of a provider version's documentation.
type docsNav struct {
	Overview template.HTML
	Groups   []navGroup
}

type navGroup struct {
	Title string
	Pages []navLink
}

type navLink struct {
	Title, URL string
	Current    bool
}

// docPage is one rendered documentation page.
type docPage struct {
	Title, Category, Subcategory, Description string
	HTML                                      template.HTML
	Truncated                                 bool
}

// docsCache keeps parsed documentation archives.
type docsCache struct{ blobs store.Blobs }

func newDocsCache(b store.Blobs) *docsCache { return &docsCache{blobs: b} }

func (s *Service) docsNav(ctx context.Context, pv registry.ProviderVersion) (*docsNav, error) {
	return nil, nil
}

func (s *Service) providerDocPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return errNotFound
}
