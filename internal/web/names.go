package web

import (
	"strings"
	"sync"

	"trove.dev/trove/internal/registry"
)

// maxKnownNames bounds each nameMemo: past it the memo starts again
// empty, so addresses made up by the million cost a parse each, never
// memory.
const maxKnownNames = 4096

// nameMemo remembers the names its parser returned unchanged: the
// namespace, module and provider names of the addresses visitors read,
// which a cached page would otherwise parse on every request (the
// namespace rule goes through IDNA and a regular expression, a tenth of
// a cached module page's CPU). A remembered name is valid and already
// normalized, so it is its own answer; any other input, including one
// the parser changes or refuses, is parsed as before. The answers are
// the parser's, so the rules stay in internal/registry.
type nameMemo struct {
	parse func(string) (string, error)
	mu    sync.RWMutex
	known map[string]struct{}
}

// Memos of the parsers the pages call per request.
var (
	namespaceNames = &nameMemo{parse: registry.ParseNamespace}
	moduleNames    = &nameMemo{parse: registry.ParseModuleName}
	moduleSystems  = &nameMemo{parse: registry.ParseModuleSystem}
	providerTypes  = &nameMemo{parse: registry.ParseProviderType}
)

// get returns what the parser returns for name.
func (m *nameMemo) get(name string) (string, error) {
	m.mu.RLock()
	_, ok := m.known[name]
	m.mu.RUnlock()
	if ok {
		return name, nil
	}
	norm, err := m.parse(name)
	if err != nil || norm != name {
		return norm, err
	}
	m.mu.Lock()
	if len(m.known) >= maxKnownNames || m.known == nil {
		m.known = make(map[string]struct{}, 64)
	}
	m.known[strings.Clone(name)] = struct{}{} // not the request's path
	m.mu.Unlock()
	return norm, nil
}
