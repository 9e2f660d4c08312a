package app

import (
	"context"
	"fmt"
	"net/http"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// moduleMirror builds the module mirror of the --module-mirror mappings:
// mirrored versions are published by mods (the publish gate), with an
// audit entry and module.published event committed with each.
func (a *App) moduleMirror(ctx context.Context, mir *mirror.Mirror, mods *modules.Publisher) (*mirror.Modules, error) {
	cfg := a.Config
	var maps []mirror.ModuleMapping
	seen := map[string]bool{}
	for _, s := range cfg.ModuleMirrorList() {
		mp, err := mirror.ParseModuleMapping(s)
		if err != nil {
			return nil, fmt.Errorf("--module-mirror: %s", registry.Message(err))
		}
		if seen[mp.Namespace] {
			return nil, fmt.Errorf("--module-mirror: namespace %s is mapped twice", mp.Namespace)
		}
		seen[mp.Namespace] = true
		maps = append(maps, mp)
		if _, err := a.Index.GetNamespace(ctx, mp.Namespace); registry.IsKind(err, registry.NotFound) {
			a.log.WarnContext(ctx, "module mirror: the namespace does not exist, so its modules cannot be installed; create it with: trove namespace create "+mp.Namespace+" --visibility public",
				"namespace", mp.Namespace, "upstream", mp.Host+"/"+mp.UpstreamNamespace)
		}
	}
	rec := audit.New(a.Index, a.log)
	return mir.Modules(mirror.ModuleOptions{
		Mappings: maps, Index: a.Index, Publisher: mods,
		MaxArchiveBytes: cfg.Limits.MaxZipBytes, MaxCheckoutBytes: 2 * cfg.Limits.MaxUnpackedBytes,
		Effects: func(ctx context.Context, namespace string) *store.Effects {
			fx := &store.Effects{}
			fx.Bind = func(record any) {
				v, ok := record.(registry.ModuleVersion)
				if !ok {
					return
				}
				fx.Audit, fx.Events = nil, nil
				rec.Add(fx, nil, registry.AuditEvent{Action: registry.AuditModulePublish, Actor: "mirror", Namespace: v.Namespace,
					Target: v.Namespace + "/" + v.Name + "/" + v.System + " " + v.Version, Details: v.Origin})
				if a.Events != nil {
					a.Events.Add(ctx, fx, (*http.Request)(nil), webhook.Event{Type: registry.EventModulePublished, Actor: "mirror", Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version})
				}
			}
			return fx
		},
		Done: func(ctx context.Context, fx *store.Effects) {
			rec.Done(ctx, fx)
			if a.Events != nil {
				a.Events.Done(ctx, fx)
			}
		},
	}), nil
}
