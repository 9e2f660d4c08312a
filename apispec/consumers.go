package apispec

// Consumers: who downloaded which versions (docs/consumers.md).
const (
	// RouteProviderConsumers reports the consumers of a provider's
	// versions (query: days, versions).
	RouteProviderConsumers = RouteProvider + "/consumers" // GET
	// RouteModuleConsumers reports the consumers of a module's versions
	// (query: days, versions).
	RouteModuleConsumers = RouteModule + "/consumers" // GET
)

// DefaultConsumerDays is the window of a consumer report without a days
// parameter.
const DefaultConsumerDays = 30

// ConsumerReport is the answer of GET RouteProviderConsumers and
// RouteModuleConsumers: the downloads of the versions that match the
// constraint, by consumer, by client and by day, over the days from Since
// to Until (UTC, both included).
type ConsumerReport struct {
	Since string `json:"since"`
	Until string `json:"until"`
	// Versions is the version constraint the report was asked for; ""
	// for every version.
	Versions  string `json:"versions,omitempty"`
	Downloads int64  `json:"downloads"`
	// Consumers are who downloaded, most downloads first.
	Consumers []ConsumerUse `json:"consumers"`
	// Clients is the mix of clients, most downloads first.
	Clients []ClientUse `json:"clients"`
	// Daily is the downloads of each version on each day that had any,
	// by day then version.
	Daily []DailyUse `json:"daily"`
}

// ConsumerUse is what one consumer downloaded in a report's window.
type ConsumerUse struct {
	// Consumer is "user:<name>", "token:<id>" (a service token),
	// "ci:<repository> (<workflow>)" (a keyless CI token) or
	// "anonymous" (no token, public namespaces only).
	Consumer  string `json:"consumer"`
	Downloads int64  `json:"downloads"`
	// LastSeen is the last day the consumer downloaded.
	LastSeen string `json:"last_seen"`
	// Versions are the versions it downloaded, newest first.
	Versions []string `json:"versions"`
	// Clients are the clients it used ("terraform 1.9.5").
	Clients []string `json:"clients"`
}

// ClientUse is the downloads of one client and version.
type ClientUse struct {
	// Client is "terraform", "opentofu" or "other".
	Client    string `json:"client"`
	Version   string `json:"version,omitempty"`
	Downloads int64  `json:"downloads"`
}

// DailyUse is the downloads of one version on one day.
type DailyUse struct {
	Day       string `json:"day"`
	Version   string `json:"version"`
	Downloads int64  `json:"downloads"`
}
