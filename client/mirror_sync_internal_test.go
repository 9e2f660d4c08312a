package client

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/protocol/providers"
)

// TestMirrorRoutesMatchServer: the client's mirror paths are the server's
// route with its {file} spelled out.
func TestMirrorRoutesMatchServer(t *testing.T) {
	route := strings.TrimPrefix(providers.RouteMirror, "GET ")
	if want := strings.Replace(route, "{file}", "index.json", 1); mirrorIndexRoute != want {
		t.Errorf("mirrorIndexRoute = %q, want %q", mirrorIndexRoute, want)
	}
	if want := strings.Replace(route, "{file}", "{version}.json", 1); mirrorVersionRoute != want {
		t.Errorf("mirrorVersionRoute = %q, want %q", mirrorVersionRoute, want)
	}
}
