package api

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
)

// registerModules mounts the module routes with route.
func (h *handler) registerModules(route func(pattern string, fn httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteModules, h.listModules)
	route("GET "+apispec.RouteModule, h.getModule)
	route("GET "+apispec.RouteModuleVersion, h.getModuleVersion)
	route("POST "+apispec.RouteModuleVersion, h.publishModuleVersion)
	route("DELETE "+apispec.RouteModuleVersion, h.deleteModuleVersion)
	route("GET "+apispec.RouteModuleProvenance, h.getModuleProvenance)
}

func (h *handler) listModules(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := registry.ModuleFilter{Namespace: ns, Query: strings.TrimSpace(q.Get(apispec.ModuleQueryParam))}
	if err := registry.SearchQueryLimit.Check(f.Query); err != nil {
		return err
	}
	if s := q.Get(apispec.ModuleSystemParam); s != "" {
		if f.System, err = registry.ParseModuleSystem(s); err != nil {
			return err
		}
	}
	if f.Offset, err = intQuery(q.Get(apispec.ModuleOffsetParam), apispec.ModuleOffsetParam, 0, 0, 1<<30); err != nil {
		return err
	}
	if f.Limit, err = intQuery(q.Get(apispec.ModuleLimitParam), apispec.ModuleLimitParam, apispec.DefaultModuleLimit, 1, apispec.MaxModuleLimit); err != nil {
		return err
	}
	mods, total, err := h.Index.ListModules(r.Context(), f)
	if err != nil {
		return err
	}
	out := apispec.ModuleList{Modules: make([]apispec.Module, 0, len(mods)), Total: total, Offset: f.Offset, Limit: f.Limit}
	for _, m := range mods {
		out.Modules = append(out.Modules, apispec.Module{
			Namespace: m.Namespace, Name: m.Name, System: m.System, LatestVersion: m.LatestVersion,
			VersionCount: m.VersionCount, Description: m.Description, UpdatedAt: m.UpdatedAt,
		})
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// moduleParams validates {name} and {system}.
func moduleParams(r *http.Request) (name, system string, err error) {
	if name, err = registry.ParseModuleName(r.PathValue("name")); err != nil {
		return "", "", err
	}
	if system, err = registry.ParseModuleSystem(r.PathValue("system")); err != nil {
		return "", "", err
	}
	return name, system, nil
}

func (h *handler) getModule(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	name, system, err := moduleParams(r)
	if err != nil {
		return err
	}
	versions, err := h.Index.ListModuleVersions(r.Context(), ns, name, system)
	if err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "module %s/%s/%s has no versions", ns, name, system)
		}
		return err
	}
	registry.SortNewestFirst(versions, func(v registry.ModuleVersion) string { return v.Version })
	counts, err := h.moduleDownloads(r.Context(), ns, name, system)
	if err != nil {
		return err
	}
	out := apispec.ModuleDetail{Namespace: ns, Name: name, System: system, Versions: make([]apispec.ModuleVersion, 0, len(versions))}
	for _, v := range versions {
		doc := ModuleVersionDoc(v)
		doc.Downloads = counts[registry.ModuleDownload(ns, name, system, v.Version)]
		out.Versions = append(out.Versions, doc)
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// moduleVersionParams reads and checks the namespace (readable by the
// caller), module name, system and version of a module version's route.
func (h *handler) moduleVersionParams(r *http.Request) (ns, name, system, ver string, err error) {
	if ns, err = h.namespaceParam(r, registry.ScopeRead); err != nil {
		return "", "", "", "", err
	}
	if name, system, err = moduleParams(r); err != nil {
		return "", "", "", "", err
	}
	ver = r.PathValue("version")
	if _, err := registry.ParseVersion(ver); err != nil {
		return "", "", "", "", err
	}
	return ns, name, system, ver, nil
}

// getModuleProvenance answers the DSSE envelope of a module version's
// provenance, as it was stored when the version was published or
// imported, with the keys that verify it: the ones an air-gap bundle
// carried with an imported version (the exporting Trove's), else the
// namespace's Trove-managed keys.
func (h *handler) getModuleProvenance(w http.ResponseWriter, r *http.Request) error {
	ns, name, system, ver, err := h.moduleVersionParams(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	envelope, err := h.Index.ModuleProvenance(ctx, ns, name, system, ver)
	if err != nil {
		return err
	}
	out := apispec.ModuleProvenance{Envelope: envelope}
	keys, err := h.Index.ModuleProvenanceKeys(ctx, ns, name, system, ver)
	switch {
	case err == nil:
		out.Imported = true
	case !registry.IsKind(err, registry.NotFound):
		return err
	default:
		all, err := h.Index.ListSigningKeys(ctx, ns)
		if err != nil {
			return err
		}
		keys = slices.DeleteFunc(all, func(k registry.SigningKey) bool { return !k.Managed })
	}
	out.Keys = bundleKeys(keys)
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getModuleVersion(w http.ResponseWriter, r *http.Request) error {
	ns, name, system, ver, err := h.moduleVersionParams(r)
	if err != nil {
		return err
	}
	v, err := h.Index.GetModuleVersion(r.Context(), ns, name, system, ver)
	if err != nil {
		return err
	}
	counts, err := h.moduleDownloads(r.Context(), ns, name, system)
	if err != nil {
		return err
	}
	doc := ModuleVersionDoc(v)
	doc.Downloads = counts[registry.ModuleDownload(ns, name, system, v.Version)]
	return httpjson.Write(w, http.StatusOK, doc)
}

// publishModuleVersion streams the archive into the module Publisher.
func (h *handler) publishModuleVersion(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	if h.Modules == nil {
		return registry.Errorf(registry.Internal, "module publishing is not configured on this server")
	}
	body, err := httpjson.Body(w, r, h.MaxUploadBytes)
	if err != nil {
		return err
	}
	// Read what the client sends even when the publish is refused early,
	// so that it sees the answer instead of a reset connection.
	defer func() { _, _ = io.Copy(io.Discard, body) }()
	archive, err := moduleArchive(r, body)
	if err != nil {
		return err
	}
	archive = clientReader{archive, "the module archive"}
	res, err := h.Ops.PublishModule(r.Context(), actor(r), modules.Upload{
		Namespace: ns, Name: r.PathValue("name"), System: r.PathValue("system"), Version: r.PathValue("version"),
		Origin: r.URL.Query().Get(apispec.ModuleOriginParam), Archive: archive,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	warnings := res.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return httpjson.Write(w, status, apispec.ModulePublishResult{Created: res.Created, Version: ModuleVersionDoc(res.Version), Warnings: warnings})
}

// moduleArchive returns the archive of a publish request: the body itself,
// or the one file part of a multipart body.
func moduleArchive(r *http.Request, body io.Reader) (io.Reader, error) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "a module publish needs a Content-Type: %s, %s, application/octet-stream or multipart/form-data", apispec.ModuleArchiveTarGz, apispec.ModuleArchiveZip)
	}
	switch mediaType {
	case apispec.ModuleArchiveTarGz, "application/x-gzip", "application/x-tar+gzip":
		return declared(body, gzipMagic, "a .tar.gz archive ("+mediaType+")")
	case apispec.ModuleArchiveZip:
		return declared(body, zipMagic, "a .zip archive ("+mediaType+")")
	case "application/octet-stream":
		return body, nil
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, registry.Errorf(registry.Invalid, "multipart body without a boundary")
		}
		mr := multipart.NewReader(body, params["boundary"])
		part, err := mr.NextPart()
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "a multipart module publish needs one %q part holding the archive", apispec.PublishFileField)
		}
		if part.FormName() != apispec.PublishFileField {
			return nil, registry.Errorf(registry.Invalid, "unexpected multipart part %q: send the archive as the %q part", part.FormName(), apispec.PublishFileField)
		}
		return &singlePart{part: part, mr: mr}, nil
	}
	return nil, registry.Errorf(registry.Invalid, "unsupported Content-Type %q for a module archive: use %s, %s or multipart/form-data", mediaType, apispec.ModuleArchiveTarGz, apispec.ModuleArchiveZip)
}

// The first bytes of the archive formats.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zipMagic  = []byte("PK")
)

// declared returns body after checking that it starts as the format its
// Content-Type declares (what stands for either is application/octet-stream,
// which is sniffed): a body of the other format is a client's mistake,
// answered 400, not quietly published under another format.
func declared(body io.Reader, magic []byte, what string) (io.Reader, error) {
	br := bufio.NewReader(body)
	head, _ := br.Peek(len(magic))
	if len(head) == len(magic) && !bytes.Equal(head, magic) {
		return nil, registry.Errorf(registry.Invalid, "the Content-Type says %s but the body is not one: send the archive's own type, or application/octet-stream", what)
	}
	return br, nil
}

// clientReader reads a request body on which a failure is the client's:
// a body cut short, a malformed chunked encoding or a broken multipart
// part answers 400 instead of 500, naming what was being uploaded (what,
// such as "the module archive"). Errors that already have a kind (the
// size limit, a second part) pass through.
type clientReader struct {
	r    io.Reader
	what string
}

func (c clientReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var maxErr *http.MaxBytesError
	var kinded *registry.Error
	if errors.As(err, &maxErr) || errors.As(err, &kinded) {
		return n, err
	}
	return n, registry.Wrap(registry.Invalid, err, "the upload of "+c.what+" ended early or is malformed: send it again")
}

// singlePart reads one multipart part and fails if another part follows,
// so that a second archive is never silently ignored.
type singlePart struct {
	part *multipart.Part
	mr   *multipart.Reader
}

func (s *singlePart) Read(p []byte) (int, error) {
	n, err := s.part.Read(p)
	if err == io.EOF {
		if _, nerr := s.mr.NextPart(); nerr != io.EOF {
			return n, registry.Errorf(registry.Invalid, "a module publish takes exactly one archive part")
		}
	}
	return n, err
}

func (h *handler) deleteModuleVersion(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.namespaceParam(r, registry.ScopeAdmin); err != nil {
		return err
	}
	if h.Modules == nil {
		return registry.Errorf(registry.Internal, "module management is not configured on this server")
	}
	inUse, err := inUseParam(r)
	if err != nil {
		return err
	}
	if err := h.Ops.DeleteModuleVersion(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system"),
		r.PathValue("version"), r.URL.Query().Get(apispec.ModuleConfirmParam), inUse); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// moduleTarget names a module version in the audit log:
// "acme/network/aws 1.2.0".
func moduleTarget(v registry.ModuleVersion) string {
	return v.Namespace + "/" + v.Name + "/" + v.System + " " + v.Version
}

// confirmed reports whether confirm names the module version want.
func confirmed(confirm string, want registry.ModuleVersion) bool {
	parts := strings.Split(confirm, "/")
	if len(parts) != 4 {
		return false
	}
	got, err := modules.ParseStoredAddress(parts[0], parts[1], parts[2], parts[3])
	return err == nil && got.Namespace == want.Namespace && got.Name == want.Name && got.System == want.System && got.Version == want.Version
}

// ModuleVersionDoc renders a module version as the API shows it.
func ModuleVersionDoc(v registry.ModuleVersion) apispec.ModuleVersion {
	return apispec.ModuleVersion{
		Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version,
		ArchiveFormat: v.ArchiveFormat, ArchiveSize: v.ArchiveSize, ArchiveDigest: v.ArchiveDigest,
		Description: v.Description, Origin: v.Origin, PublishedAt: v.PublishedAt, Metadata: v.Metadata,
		Deprecation: deprecationDoc(v.Deprecation), Revocation: revocationDoc(v.Revocation),
	}
}

// intQuery reads an optional integer query value within [lo, hi].
func intQuery(s, name string, def, lo, hi int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, registry.Errorf(registry.Invalid, "%s must be a whole number from %d to %d, got %q", name, lo, hi, s)
	}
	return n, nil
}
