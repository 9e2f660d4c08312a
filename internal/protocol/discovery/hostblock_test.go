package discovery

import (
	"net/url"
	"reflect"
	"testing"
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
