package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
)

// TestEndedTokenRefusedAtOnce: a token revoked or expired through the
// management API is refused on the very next request, also on the
// module protocol routes, which authenticate through the token cache:
// the write reaches the cache through the index's commit hook alone
// (store.ChangeHook), not through a clear of the entrance.
func TestEndedTokenRefusedAtOnce(t *testing.T) {
	s, _ := setup(t)
	do := func(t *testing.T, method, path, token, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, id string) (int, string)
	}{
		{"revoked", func(t *testing.T, id string) (int, string) {
			return do(t, "DELETE", "/api/v1/tokens/"+id, s.AdminToken, "")
		}},
		{"expired", func(t *testing.T, id string) (int, string) {
			return do(t, "PATCH", "/api/v1/tokens/"+id, s.AdminToken, `{"expires_at":"`+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+`"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, "POST", "/api/v1/tokens", s.AdminToken, `{"namespaces":["acme"],"scopes":["read"],"description":"cache probe"}`)
			var created apispec.CreatedToken
			if err := json.Unmarshal([]byte(body), &created); status != http.StatusCreated || err != nil || created.Secret == "" {
				t.Fatalf("creating a token: %d %s", status, body)
			}
			id := created.Token.ID
			for range 2 { // the second from the cache
				if status, body := do(t, "GET", "/v1/modules", created.Secret, ""); status != http.StatusOK {
					t.Fatalf("the new token on the module list: %d %s", status, body)
				}
			}
			if status, body := tc.end(t, id); status >= 300 {
				t.Fatalf("ending the token: %d %s", status, body)
			}
			if status, body := do(t, "GET", "/v1/modules", created.Secret, ""); status != http.StatusUnauthorized {
				t.Errorf("the %s token on the next request: %d %s, want 401", tc.name, status, body)
			}
		})
	}
}
