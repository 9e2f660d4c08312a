package api

import (
	"net/http"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerConsumers mounts the consumer reports. Who downloaded is known
// only to those who may publish to the namespace: a reader of a public
// namespace does not learn its consumers' names.
func (h *handler) registerConsumers(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteProviderConsumers, h.providerConsumers)
	route("GET "+apispec.RouteModuleConsumers, h.moduleConsumers)
}

func (h *handler) providerConsumers(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	typ, err := registry.ParseProviderType(r.PathValue("type"))
	if err != nil {
		return err
	}
	return h.consumerReport(w, r, registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: ns, Name: typ})
}

func (h *handler) moduleConsumers(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	name, system, err := moduleParams(r)
	if err != nil {
		return err
	}
	return h.consumerReport(w, r, registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: ns, Name: name, System: system})
}

// consumerReport answers the report of q over the window and versions
// the query asks for (days, versions).
func (h *handler) consumerReport(w http.ResponseWriter, r *http.Request, q registry.ConsumerQuery) error {
	days := apispec.DefaultConsumerDays
	if s := r.URL.Query().Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return registry.Errorf(registry.Invalid, "days %q is not a number of days", registry.Elide(s))
		}
		days = n
	}
	constraint := r.URL.Query().Get("versions")
	if err := registry.VersionConstraintLimit.CheckText(constraint); err != nil {
		return err
	}
	if err := registry.CheckVersionConstraint(constraint); err != nil {
		return err
	}
	since, until, err := downloads.ConsumerWindow(h.Now(), days)
	if err != nil {
		return err
	}
	q.Since = since
	var records []registry.ConsumerCount
	if h.Downloads != nil {
		if records, err = h.Downloads.ConsumerDownloads(r.Context(), q); err != nil {
			return err
		}
	}
	report, err := downloads.Report(records, since, until, constraint)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, report)
}
