package operations

import (
	"context"
	"strconv"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/registry"
)

// CollectGarbage runs one garbage collection (Options.GC), for global
// admins or the operator (a scheduled collection, Actor.Operator). The
// versions the namespaces' retention rules expire are deleted by
// ExpireVersion, each audited and announced in its own transaction as a
// user's delete is; a collection that was not a dry run and completed is
// recorded in the audit log (gc.run) with what it reclaimed. The caller
// decides the context: a collection the client stops waiting for should
// run to its end (context.WithoutCancel).
func (o *Operations) CollectGarbage(ctx context.Context, a Actor, run gc.Run) (gc.Report, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return gc.Report{}, err
	}
	if o.opt.GC == nil {
		return gc.Report{}, registry.Errorf(registry.Internal, "garbage collection is not configured on this server")
	}
	run.Delete = func(ctx context.Context, e gc.Expired) error {
		return o.ExpireVersion(ctx, a, ExpiredVersion{Module: e.Kind == "module",
			Version: VersionRef{Namespace: e.Namespace, Name: e.Name, System: e.System, Version: e.Version}})
	}
	rep, err := o.opt.GC.Run(ctx, run)
	if err == nil && !rep.DryRun {
		// No index row goes with it: the versions deleted by retention
		// rules were recorded with their deletion.
		o.opt.Audit.Record(ctx, nil, registry.AuditEvent{Action: registry.AuditGC, Actor: a.name(), SourceAddr: a.source(),
			Target: "blobs", Details: gcDetails(rep)})
	}
	return rep, err
}

// gcDetails sums up a collection for the audit log.
func gcDetails(rep gc.Report) string {
	return "reclaimed " + strconv.Itoa(len(rep.Reclaimed)) + " blobs, " + strconv.FormatInt(rep.ReclaimedBytes, 10) +
		" bytes; " + strconv.Itoa(len(rep.Expired)) + " versions deleted by retention rules; grace " + rep.Grace.String() +
		"; " + strconv.Itoa(rep.Stored) + " stored, " + strconv.Itoa(rep.Referenced) + " referenced"
}
