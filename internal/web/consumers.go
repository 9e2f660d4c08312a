package web

import (
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// The consumers section of provider and module pages (docs/consumers.md):
// who downloaded which versions, and with which clients, over the days
// and versions the section's form asks for (GET parameters days and
// versions, as the API's). It is shown to a signed-in visitor whom the
// API would answer (operations' ConsumerReport decides, publish rights
// on the namespace), and to no one else, not even as an empty section.
//
// Consumer names are the visitor's to see, not the page's: a page with
// the section is rendered for its request alone and never read from nor
// kept in the page cache, which holds only pages without it.

// Bounds of the section's tables: the busiest consumers and clients are
// shown, the rest counted (the CLI and the API list them all).
const (
	maxConsumerRows = 100
	maxClientRows   = 50
)

// consumersData is what the consumers section shows.
type consumersData struct {
	// Action is the page the form asks again (its path).
	Action string
	// Days and Versions are the form's values as the visitor sent them
	// (escaped by the template), Days the default when none was sent.
	Days, Versions string
	MaxDays        int
	MaxVersions    int
	// Error says why days or versions were refused; the report is then
	// empty.
	Error string
	// Report is the API's answer for these parameters, its tables cut to
	// the rows shown.
	Report apispec.ConsumerReport
	// ConsumerCount is how many consumers the report has; MoreConsumers
	// and MoreClients how many rows are not shown.
	ConsumerCount, MoreConsumers, MoreClients int
	// Command is the CLI command that lists the same report whole (with
	// the form's values only when they were accepted).
	Command string
}

// consumers returns the consumers section of q's page for visit v of r,
// or nil when the visitor may not see it (not signed in, or no publish
// rights: ConsumerReport's refusal is the answer, never shown). Days or
// versions that ConsumerReport refuses give a section with the error; a
// report that fails otherwise gives a section saying it is unavailable
// (logged at warn), so that the page is served all the same.
func (s *Service) consumers(r *http.Request, v *visit, q registry.ConsumerQuery) (*consumersData, error) {
	if !v.signedIn() {
		return nil, nil // the section is for signed-in publishers; no report is asked for
	}
	params := r.URL.Query()
	days, versions := params.Get("days"), params.Get("versions")
	actor := operations.Actor{Principal: v.p, Addr: r.RemoteAddr}
	report, err := s.opt.Operations.ConsumerReport(r.Context(), actor, q, days, versions)
	if err == nil || registry.IsKind(err, registry.Invalid) {
		// The API's rules for its query, on the form's fields: a value
		// given twice is refused rather than one of them chosen. Applied
		// once the rights are known, as ConsumerReport's own checks are.
		if perr := checkConsumerQuery(q, params); perr != nil {
			err = perr
		}
	}
	unavailable := false
	switch {
	case err == nil, registry.IsKind(err, registry.Invalid):
		// ConsumerReport checks the rights before the parameters: an
		// Invalid answer is for a visitor who may see the section.
	case registry.IsKind(err, registry.Forbidden), registry.IsKind(err, registry.Unauthenticated), registry.IsKind(err, registry.NotFound):
		return nil, nil
	default:
		// The report failed otherwise (the index unreachable, say): the
		// rest of the page is still served. The section says so to a
		// visitor who may see it; whether this one may is asked again,
		// since the failure may have come from that check, and the
		// section is left out when that cannot be told either.
		s.log.WarnContext(r.Context(), "web: the consumers section shows no report: the consumer report failed",
			"namespace", q.Namespace, "name", q.Name, "system", q.System, "err", err)
		if _, err := s.opt.Operations.Namespace(r.Context(), actor, q.Namespace, registry.ScopePublish); err != nil {
			return nil, nil
		}
		unavailable = true
	}
	d := &consumersData{Action: r.URL.Path, Days: days, Versions: versions,
		MaxDays: registry.MaxConsumerDays, MaxVersions: registry.MaxVersionConstraintLength}
	if d.Days == "" {
		d.Days = strconv.Itoa(apispec.DefaultConsumerDays)
	}
	address := q.Namespace + "/" + q.Name
	if q.Kind == registry.DownloadModule {
		address += "/" + q.System
	}
	d.Command = "trove consumers " + address // the form's values added below once accepted
	switch {
	case unavailable:
		d.Error = consumersUnavailable
		return d, nil
	case err != nil:
		d.Error = registry.Message(err)
		return d, nil
	}
	d.Report = report
	if n := len(report.Consumers); n > maxConsumerRows {
		d.Report.Consumers, d.MoreConsumers = report.Consumers[:maxConsumerRows], n-maxConsumerRows
	}
	if n := len(report.Clients); n > maxClientRows {
		d.Report.Clients, d.MoreClients = report.Clients[:maxClientRows], n-maxClientRows
	}
	d.ConsumerCount = len(report.Consumers)
	if days != "" {
		d.Command += " --days " + days
	}
	if versions != "" {
		d.Command += " --versions " + shellQuote(versions)
	}
	return d, nil
}

// consumersUnavailable is the section's text when the report could not
// be made; the cause is in the log.
const consumersUnavailable = "The consumer report is unavailable right now: try again in a moment, or ask an administrator to look at Trove's log if it stays so."

// shellQuote quotes s for a POSIX shell, for a command shown to copy.
func shellQuote(s string) string {
	out := "'"
	for _, c := range s {
		if c == '\'' {
			out += `'\''`
		} else {
			out += string(c)
		}
	}
	return out + "'"
}

// checkConsumerQuery applies the consumer report API's query rules
// (apispec.CheckQuery, apispec.CheckRepeats) to the page's days and
// versions fields.
func checkConsumerQuery(q registry.ConsumerQuery, params url.Values) error {
	fields := url.Values{}
	for _, name := range []string{"days", "versions"} {
		if vs, ok := params[name]; ok {
			fields[name] = vs
		}
	}
	route := apispec.RouteProviderConsumers
	if q.Kind == registry.DownloadModule {
		route = apispec.RouteModuleConsumers
	}
	if err := apispec.CheckQuery(fields); err != nil {
		return err
	}
	return apispec.CheckRepeats(route, fields)
}
