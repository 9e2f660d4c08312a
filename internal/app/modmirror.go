package app

import (
	"context"
	"fmt"

	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
)

// modulePublishFunc is a mirror.ModulePublisher.
type modulePublishFunc func(ctx context.Context, up modules.Upload) (modules.Result, error)

// Publish calls f.
func (f modulePublishFunc) Publish(ctx context.Context, up modules.Upload) (modules.Result, error) {
	return f(ctx, up)
}

// moduleMirror builds the module mirror of the --module-mirror mappings:
// mirrored versions are published by pub (operations.PublishMirroredModule:
// the checks of every module publish, with an audit entry and
// module.published event committed with each).
func (a *App) moduleMirror(ctx context.Context, mir *mirror.Mirror, pub mirror.ModulePublisher) (*mirror.Modules, error) {
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
	return mir.Modules(mirror.ModuleOptions{
		Mappings: maps, Index: a.Index, Publisher: pub,
		MaxArchiveBytes: cfg.Limits.MaxZipBytes, MaxCheckoutBytes: 2 * cfg.Limits.MaxUnpackedBytes,
	}), nil
}
