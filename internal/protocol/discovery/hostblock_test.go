package discovery

import (
	"net/url"
	"reflect"
	"testing"

	svchost "github.com/hashicorp/terraform-svchost"
)

func TestAbsoluteResolvesEveryURL(t *testing.T) {
	base, _ := url.Parse("https://localhost:8443/")
	got := Absolute(map[string]any{
		"providers.v1": "/v1/providers/",
		"modules.v1":   "https://elsewhere.example/v1/modules/",
		"login.v1": map[string]any{
			"client": "terraform-cli", "authz": "/oauth/authorize", "token": "/oauth/token",
			"grant_types": []string{"authz_code"}, "ports": []int{10000, 10010},
		},
	}, base)
	want := map[string]any{
		"providers.v1": "https://localhost:8443/v1/providers/",
		"modules.v1":   "https://elsewhere.example/v1/modules/",
		"login.v1": map[string]any{
			"client": "terraform-cli", "authz": "https://localhost:8443/oauth/authorize", "token": "https://localhost:8443/oauth/token",
			"grant_types": []string{"authz_code"}, "ports": []int{10000, 10010},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Absolute = %#v\nwant %#v", got, want)
	}
}

func TestHostBlock(t *testing.T) {
	got := HostBlock("trove.localhost", map[string]any{
		"providers.v1": "https://localhost:8443/v1/providers/",
		"login.v1": map[string]any{
			"client": "terraform-cli", "authz": "https://localhost:8443/oauth/authorize",
			"grant_types": []string{"authz_code"}, "ports": []int{10000, 10010},
		},
	})
	want := `host "trove.localhost" {
  services = {
    "login.v1" = {
      "authz" = "https://localhost:8443/oauth/authorize"
      "client" = "terraform-cli"
      "grant_types" = ["authz_code"]
      "ports" = [10000, 10010]
    }
    "providers.v1" = "https://localhost:8443/v1/providers/"
  }
}
`
	if got != want {
		t.Errorf("HostBlock =\n%s\nwant\n%s", got, want)
	}
}

func TestIsOwnHost(t *testing.T) {
	for _, c := range []struct {
		public, host string
		want         bool
	}{
		{"https://localhost:8443", "localhost:8443", true},
		{"https://localhost:8443", "trove.localhost", true},
		{"https://127.0.0.1:8443", "trove.localhost", true},
		{"https://127.0.0.1:8443", "127.0.0.1:8443", true},
		{"https://localhost:8443", "localhost:9443", false},
		{"https://localhost:8443", "registry.example", false},
		{"https://Registry.Example", "registry.example", true},
		{"https://registry.example:443", "registry.example", true},
		{"https://registry.example", "trove.localhost", false},
		{"https://registry.example:8443", "registry.example:8443", true},
		{"https://registry.example:8443", "registry.example", false},
	} {
		h, err := svchost.ForComparison(c.host)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsOwnHost(c.public, h); got != c.want {
			t.Errorf("IsOwnHost(%s, %s) = %v, want %v", c.public, c.host, got, c.want)
		}
	}
}
