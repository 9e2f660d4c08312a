package mirror

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
)

// metrics are the mirror's collectors.
type metrics struct {
	requests *prometheus.CounterVec // upstream requests by host, kind and result
	versions *prometheus.CounterVec // mirror versions answered, by source
	refused  *prometheus.CounterVec // upstream files refused (bad signature or checksum, not a zip, too large), by host
	bytes    *prometheus.CounterVec // package bytes fetched, by host
	// remembered counts package fetches answered with a remembered
	// refusal (refusals.go), without asking the upstream, by host.
	remembered *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_mirror_upstream_requests_total",
			Help: "Requests of the provider mirror to upstream registries, by host, kind (versions, download, shasums, package) and result (ok, error).",
		}, []string{"host", "kind", "result"}),
		versions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_mirror_versions_total",
			Help: "Mirrored provider versions looked up, by source: held (already in the mirror) or fetched (from the upstream).",
		}, []string{"source"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_mirror_refused_total",
			Help: "Upstream files the mirror refused to store: signatures that do not verify, packages whose checksum differs from the signed SHA256SUMS, that are no zip archive or that are over the size limit.",
		}, []string{"host"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_mirror_fetched_bytes_total",
			Help: "Bytes of provider packages the mirror fetched from upstream registries.",
		}, []string{"host"}),
		remembered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_mirror_refusals_remembered_total",
			Help: "Provider package fetches the mirror answered with a refusal it remembered (the package was refused for its bytes a short while before), without asking the upstream again, by host.",
		}, []string{"host"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.requests, &m.versions, &m.refused, &m.bytes, &m.remembered} {
		if err := reg.Register(*c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, registry.Wrap(registry.Internal, err, "registering the mirror's metrics")
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, registry.Wrap(registry.Internal, err, "registering the mirror's metrics: a different collector has the same name")
			}
			*c = existing
		}
	}
	return m, nil
}

// upstream counts one upstream request.
func (m *metrics) upstream(host, kind string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.requests.WithLabelValues(host, kind, result).Inc()
}
