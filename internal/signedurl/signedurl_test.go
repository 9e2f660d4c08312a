package signedurl

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const other = "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func split(t *testing.T, signed string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path, u.Query()
}

func TestRoundTrip(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := New([]byte("k"), 10*time.Minute).WithClock(func() time.Time { return now })
	path, q := split(t, s.Path(digest, "terraform-provider-x_1.0.0_linux_amd64.zip"))
	d, name, err := s.Verify(path, q)
	if err != nil || d != digest || name != "terraform-provider-x_1.0.0_linux_amd64.zip" {
		t.Fatalf("Verify = %q %q %v", d, name, err)
	}
	exp := s.Expiry()
	if left := exp.Sub(now); left < 5*time.Minute || left > 10*time.Minute {
		t.Fatalf("expiry %v leaves %v, want between ttl/2 and ttl", exp, left)
	}
	// Within one half-window the URL is stable, so responses can be cached.
	later := s.WithClock(func() time.Time { return now.Add(time.Second) })
	if later.Expiry() != exp && now.Truncate(5*time.Minute) == now.Add(time.Second).Truncate(5*time.Minute) {
		t.Fatalf("expiry changed within a window")
	}
}

type badCase struct {
	path string
	q    url.Values
	kind registry.Kind
}

func TestRefused(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := New([]byte("k"), 10*time.Minute).WithClock(func() time.Time { return now })
	path, q := split(t, s.Path(digest, "a.zip"))

	tamper := func(f func(p string, q url.Values) (string, url.Values)) (string, url.Values) {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = append([]string(nil), v...)
		}
		return f(path, q2)
	}
	cases := map[string]badCase{}
	p, v := tamper(func(p string, q url.Values) (string, url.Values) {
		q.Set("signature", "x"+q.Get("signature")[1:])
		return p, q
	})
	cases["tampered signature"] = badCase{p, v, registry.Forbidden}
	p, v = tamper(func(p string, q url.Values) (string, url.Values) { q.Del("signature"); return p, q })
	cases["missing signature"] = badCase{p, v, registry.Forbidden}
	p, v = tamper(func(p string, q url.Values) (string, url.Values) { return strings.Replace(p, digest, other, 1), q })
	cases["other blob"] = badCase{p, v, registry.Forbidden}
	p, v = tamper(func(p string, q url.Values) (string, url.Values) { return strings.Replace(p, "a.zip", "b.zip", 1), q })
	cases["other name"] = badCase{p, v, registry.Forbidden}
	p, v = tamper(func(p string, q url.Values) (string, url.Values) { q.Set("expires", "99999999999"); return p, q })
	cases["extended expiry"] = badCase{p, v, registry.Forbidden}
	cases["bad digest"] = badCase{PathPrefix + "../../etc/passwd/a.zip", q, registry.NotFound}
	cases["nested name"] = badCase{PathPrefix + digest + "/x/a.zip", q, registry.NotFound}

	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := s.Verify(c.path, c.q)
			if !registry.IsKind(err, c.kind) {
				t.Fatalf("Verify error = %v (kind %v), want %v", err, registry.KindOf(err), c.kind)
			}
		})
	}

	t.Run("expired", func(t *testing.T) {
		late := s.WithClock(func() time.Time { return now.Add(11 * time.Minute) })
		if _, _, err := late.Verify(path, q); !registry.IsKind(err, registry.Forbidden) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("Verify after expiry = %v", err)
		}
	})
	t.Run("other key", func(t *testing.T) {
		s2 := New([]byte("other"), 10*time.Minute).WithClock(func() time.Time { return now })
		if _, _, err := s2.Verify(path, q); !registry.IsKind(err, registry.Forbidden) {
			t.Fatalf("Verify with another key = %v", err)
		}
	})
}

// TestOriginIsBound: a URL signed with an origin returns it, and one whose
// origin was changed, added or dropped does not verify.
func TestOriginIsBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := New([]byte("k"), 10*time.Minute).WithClock(func() time.Time { return now })
	const origin = "upstream-a.example/acme/time/1.0.0/linux_amd64"
	path, q := split(t, s.PathFrom(digest, "a.zip", origin))
	if d, name, got, err := s.VerifyOrigin(path, q); err != nil || d != digest || name != "a.zip" || got != origin {
		t.Fatalf("VerifyOrigin = %q %q %q %v", d, name, got, err)
	}
	if _, _, err := s.Verify(path, q); err != nil {
		t.Errorf("Verify of a URL with an origin: %v", err)
	}
	for name, change := range map[string]func(url.Values){
		"other origin":   func(q url.Values) { q.Set("origin", "upstream-b.example/acme/time/1.0.0/linux_amd64") },
		"origin dropped": func(q url.Values) { q.Del("origin") },
	} {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = append([]string(nil), v...)
		}
		change(q2)
		if _, _, _, err := s.VerifyOrigin(path, q2); !registry.IsKind(err, registry.Forbidden) {
			t.Errorf("%s: VerifyOrigin = %v, want Forbidden", name, err)
		}
	}
	path, q = split(t, s.Path(digest, "a.zip"))
	q.Set("origin", origin)
	if _, _, _, err := s.VerifyOrigin(path, q); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("origin added to a URL signed without one: VerifyOrigin = %v, want Forbidden", err)
	}
}

func TestSum(t *testing.T) {
	s := New([]byte("k"), time.Minute)
	a, b := s.Sum("oci-token-v1", []byte("m")), s.Sum("oci-token-v2", []byte("m"))
	if a == b || a != s.Sum("oci-token-v1", []byte("m")) || a == New([]byte("other"), time.Minute).Sum("oci-token-v1", []byte("m")) {
		t.Fatalf("Sum is not bound to its purpose and key: %q %q", a, b)
	}
	for _, p := range []string{"", "file-v1", "file-v2", "x\ny"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Sum(%q) did not refuse the purpose", p)
				}
			}()
			s.Sum(p, nil)
		}()
	}
}

// TestExpiryAt: the expiry of URLs issued for a request is judged at the
// request's time, in the same half-ttl windows as Expiry's; a clock set
// with WithClock wins over the request's time.
func TestExpiryAt(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 4, 59, 0, time.UTC) // window [12:00, 12:05) of a 10-minute ttl
	s := New([]byte("k"), 10*time.Minute)
	for _, c := range []struct {
		at   time.Time
		want time.Time
	}{
		{at, time.Date(2026, 11, 28, 12, 10, 0, 0, time.UTC)},
		{at.Add(time.Second), time.Date(2026, 11, 28, 12, 15, 0, 0, time.UTC)}, // the next window
		{at.Add(-5 * time.Minute), time.Date(2026, 11, 28, 12, 5, 0, 0, time.UTC)},
	} {
		if got := s.ExpiryAt(c.at); !got.Equal(c.want) {
			t.Errorf("ExpiryAt(%v) = %v, want %v", c.at, got, c.want)
		}
		if got, want := s.WithClock(func() time.Time { return c.at }).Expiry(), c.want; !got.Equal(want) {
			t.Errorf("Expiry() with the clock at %v = %v, want %v (as ExpiryAt)", c.at, got, want)
		}
	}
	set := s.WithClock(func() time.Time { return at })
	if got, want := set.ExpiryAt(at.Add(time.Hour)), set.Expiry(); !got.Equal(want) {
		t.Errorf("ExpiryAt with a set clock = %v, want the set clock's %v", got, want)
	}
	if d := time.Until(s.Expiry()); d < 5*time.Minute || d > 10*time.Minute {
		t.Errorf("Expiry() without a set clock is %v away, want between ttl/2 and ttl", d)
	}
}
