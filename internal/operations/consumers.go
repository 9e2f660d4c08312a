package operations

import (
	"context"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
)

// ConsumerReport answers who downloaded the versions of a provider or a
// module (q: its Kind, Namespace, Name and, for a module, System; Since
// is set here) that match the version constraint versions ("" for all)
// in the last days days ("" for apispec.DefaultConsumerDays; 1 to
// registry.MaxConsumerDays), as the management API, `trove consumers`
// and the web pages show it (docs/consumers.md).
//
// Consumer names are personal data and internal structure: the report
// needs publish rights on the namespace. The rights are checked before
// anything else of the request, so that an actor without them learns
// nothing from the answer to a bad days or versions (Unauthenticated,
// Forbidden, or NotFound for a namespace it may not read); bad input is
// Invalid after that.
func (o *Operations) ConsumerReport(ctx context.Context, a Actor, q registry.ConsumerQuery, days, versions string) (apispec.ConsumerReport, error) {
	ns, err := o.Namespace(ctx, a, q.Namespace, registry.ScopePublish)
	if err != nil {
		return apispec.ConsumerReport{}, err
	}
	q.Namespace = ns
	switch q.Kind {
	case registry.DownloadProvider:
		if q.Name, err = registry.ParseProviderType(q.Name); err != nil {
			return apispec.ConsumerReport{}, err
		}
		q.System = ""
	case registry.DownloadModule:
		if q.Name, err = registry.ParseModuleName(q.Name); err != nil {
			return apispec.ConsumerReport{}, err
		}
		if q.System, err = registry.ParseModuleSystem(q.System); err != nil {
			return apispec.ConsumerReport{}, err
		}
	default:
		return apispec.ConsumerReport{}, registry.Errorf(registry.Invalid, "consumers of downloads of kind %s are not recorded", q.Kind)
	}
	n := apispec.DefaultConsumerDays
	if days != "" {
		if n, err = strconv.Atoi(days); err != nil {
			return apispec.ConsumerReport{}, registry.Errorf(registry.Invalid, "days %q is not a number of days: write a whole number from 1 to %d", registry.Elide(days), registry.MaxConsumerDays)
		}
	}
	if err := registry.VersionConstraintLimit.CheckText(versions); err != nil {
		return apispec.ConsumerReport{}, err
	}
	if err := registry.CheckVersionConstraint(versions); err != nil {
		return apispec.ConsumerReport{}, err
	}
	since, until, err := downloads.ConsumerWindow(o.opt.Now(), n)
	if err != nil {
		return apispec.ConsumerReport{}, err
	}
	q.Since = since
	var records []registry.ConsumerCount
	if o.opt.Consumers != nil {
		if records, err = o.opt.Consumers.ConsumerDownloads(ctx, q); err != nil {
			return apispec.ConsumerReport{}, err
		}
	}
	return downloads.Report(records, since, until, versions)
}
