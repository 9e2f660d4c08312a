package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerConsumers mounts the consumer reports. Who downloaded is known
// only to those who may publish to the namespace (operations'
// ConsumerReport decides): a reader of a public namespace does not learn
// its consumers' names.
func (h *handler) registerConsumers(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteProviderConsumers, h.providerConsumers)
	route("GET "+apispec.RouteModuleConsumers, h.moduleConsumers)
}

func (h *handler) providerConsumers(w http.ResponseWriter, r *http.Request) error {
	return h.consumerReport(w, r, registry.ConsumerQuery{Kind: registry.DownloadProvider,
		Namespace: r.PathValue("namespace"), Name: r.PathValue("type")})
}

func (h *handler) moduleConsumers(w http.ResponseWriter, r *http.Request) error {
	return h.consumerReport(w, r, registry.ConsumerQuery{Kind: registry.DownloadModule,
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), System: r.PathValue("system")})
}

// consumerReport answers the report of q over the window and versions
// the query asks for (days, versions).
func (h *handler) consumerReport(w http.ResponseWriter, r *http.Request, q registry.ConsumerQuery) error {
	query := r.URL.Query()
	report, err := h.Ops.ConsumerReport(r.Context(), actor(r), q, query.Get("days"), query.Get("versions"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, report)
}
