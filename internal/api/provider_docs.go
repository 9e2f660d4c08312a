package api

import (
	"bytes"
	"io"
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

// The documentation of provider versions (apispec.RouteProviderDocs): PUT
// uploads a version's archive with the rights of a publish, GET answers
// it with the rights of the protocol (anonymously for a public
// namespace), for tools; the web UI renders the pages.

// registerProviderDocs mounts the documentation routes: PUT with route,
// GET on mux behind optional authentication.
func (h *handler) registerProviderDocs(mux *http.ServeMux, route func(pattern string, fn httpjson.HandlerFunc)) {
	route("PUT "+apispec.RouteProviderDocs, h.uploadProviderDocs)
	pattern := "GET " + apispec.RouteProviderDocs
	mux.Handle(pattern, httpjson.Handler(h.Logger, h.optionallyAuthenticated(checkLimits(pattern, h.getProviderDocs))))
}

// optionallyAuthenticated resolves the caller, anonymous without a token,
// before fn runs: for reads that public namespaces allow everyone.
func (h *handler) optionallyAuthenticated(fn httpjson.HandlerFunc) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.Auth.Authenticate(r)
		if err != nil {
			return err
		}
		return fn(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}
}

// uploadProviderDocs streams the archive of the request body into
// operations.PublishProviderDocs, which checks it before anything is
// stored.
func (h *handler) uploadProviderDocs(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	// One byte over the limit lets the Publisher answer TooLarge with its
	// message; more is never read.
	body := http.MaxBytesReader(w, r.Body, apispec.MaxProviderDocsBytes+1)
	defer func() { _, _ = io.Copy(io.Discard, body) }()
	res, err := h.Ops.PublishProviderDocs(r.Context(), actor(r), ns, r.PathValue("type"), r.PathValue("version"), clientReader{body, "the documentation archive"})
	if err != nil {
		return err
	}
	v := res.Version
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	out := apispec.ProviderDocsResult{Created: res.Created, Namespace: v.Namespace, Type: v.Type, Version: v.Version,
		Digest: v.DocsDigest, Size: v.DocsSize, PageCount: len(res.Docs.Pages), Pages: make([]apispec.ProviderDocsPage, 0, len(res.Docs.Pages))}
	for _, p := range res.Docs.Pages {
		out.Pages = append(out.Pages, apispec.ProviderDocsPage{Category: p.Category, Slug: p.Slug, Title: p.Title, Subcategory: p.Subcategory})
	}
	return httpjson.Write(w, status, out)
}

// getProviderDocs answers the archive of a version's documentation.
func (h *handler) getProviderDocs(w http.ResponseWriter, r *http.Request) error {
	ns, typ, ver, err := h.providerVersionParams(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	v, err := h.Index.GetProviderVersion(r.Context(), ns, typ, ver)
	if err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", ns, typ, ver)
		}
		return err
	}
	if v.DocsDigest == "" {
		return registry.Errorf(registry.NotFound, "provider %s/%s version %s has no documentation; upload it with: trove provider docs upload %s/%s %s DIR",
			ns, typ, ver, ns, typ, ver)
	}
	b, err := h.Blobs.Open(r.Context(), v.DocsDigest)
	if err != nil {
		return err
	}
	defer b.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(b.Content, head)
	if _, err := b.Content.Seek(0, io.SeekStart); err != nil {
		return err
	}
	names := release.DocsNames(v.Type, v.Version)
	ctype, name := "application/zip", names[1]
	if bytes.Equal(head[:n], []byte{0x1f, 0x8b}) {
		ctype, name = "application/gzip", names[0]
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("ETag", `"`+v.DocsDigest+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	httpjson.ServeRange(r)
	http.ServeContent(&httpjson.RangeRefusal{ResponseWriter: w, Body: httpjson.FileRangeRefusal}, r, "", b.ModTime, b.Content)
	return nil
}
