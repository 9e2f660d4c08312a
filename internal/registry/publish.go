package registry

// The rules provider and module publishes share (internal/publish,
// internal/modules); their staging is internal/staging.

// PublishResult reports the outcome of publishing a version V (a
// ProviderVersion or a ModuleVersion).
type PublishResult[V any] struct {
	Version V
	// Created is false when the identical version was already published
	// (an idempotent retry): Version is then the stored one.
	Created bool
	// Warnings are problems found that did not stop the publish (a
	// module's configuration diagnostics); none for providers.
	Warnings []string
}

// CheckPrecedence refuses, before anything is stored, a version v of what
// (such as "provider acme/foo") whose precedence equals that of a stored
// one, that is equal but for build metadata (see PrecedenceConflict).
// list returns the stored versions, NotFound meaning none; version reads
// each one's version. The index checks it again in the transaction that
// creates the version.
func CheckPrecedence[T any](what, v string, list func() ([]T, error), version func(T) string) error {
	stored, err := list()
	if IsKind(err, NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if existing, ok := SamePrecedence(v, stored, version); ok {
		return PrecedenceConflict(what, v, existing)
	}
	return nil
}

// ResolveCreateConflict decides what a Conflict createErr, answered by the
// index to the creation of a version (or by CheckPrecedence before it),
// means: either a concurrent publish of the same version won the race, or
// a stored version equals it but for build metadata. get looks the
// version up by its exact name: not found, createErr stands; found,
// existing decides between an idempotent retry and a conflict, as it did
// before the creation. A publisher's first lookup of its version and
// CheckPrecedence read the index at different moments, so a concurrent
// publish of the same version that commits between the two shows up as a
// precedence clash with the version itself: it must be resolved here too.
func ResolveCreateConflict[V any](createErr error, get func() (V, error), existing func(V) (PublishResult[V], error)) (PublishResult[V], error) {
	stored, err := get()
	if IsKind(err, NotFound) {
		return PublishResult[V]{}, createErr
	}
	if err != nil {
		return PublishResult[V]{}, err
	}
	return existing(stored)
}
