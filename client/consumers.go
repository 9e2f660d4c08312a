package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/apispec"
)

// ConsumerQuery selects the window and versions of a consumer report.
type ConsumerQuery struct {
	// Days is the window, ending today; 0 means
	// apispec.DefaultConsumerDays.
	Days int
	// Versions is a version constraint ("" for every version).
	Versions string
}

func (q ConsumerQuery) values() url.Values {
	v := url.Values{}
	if q.Days != 0 {
		v.Set("days", strconv.Itoa(q.Days))
	}
	if q.Versions != "" {
		v.Set("versions", q.Versions)
	}
	return v
}

// ProviderConsumers reports who downloaded a provider's versions (needs
// publish rights on the namespace).
func (c *Client) ProviderConsumers(ctx context.Context, namespace, typ string, q ConsumerQuery) (apispec.ConsumerReport, error) {
	var out apispec.ConsumerReport
	err := c.do(ctx, http.MethodGet, apispec.RouteProviderConsumers, params("namespace", namespace, "type", typ), q.values(), nil, &out)
	return out, err
}

// ModuleConsumers reports who downloaded a module's versions (needs
// publish rights on the namespace).
func (c *Client) ModuleConsumers(ctx context.Context, namespace, name, system string, q ConsumerQuery) (apispec.ConsumerReport, error) {
	var out apispec.ConsumerReport
	err := c.do(ctx, http.MethodGet, apispec.RouteModuleConsumers, params("namespace", namespace, "name", name, "system", system), q.values(), nil, &out)
	return out, err
}
