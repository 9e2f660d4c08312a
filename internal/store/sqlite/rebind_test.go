package sqlite

import "testing"

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"WHERE a = $1 AND b = $12", "WHERE a = ?1 AND b = ?12"},
		{"$1", "?1"},
		{"cost $ and $x", "cost $ and $x"},
		{"ends with $", "ends with $"},
		{"$$1", "$?1"},
		{"", ""},
	} {
		if got := (dialect{}).Rebind(c.in); got != c.want {
			t.Errorf("Rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
