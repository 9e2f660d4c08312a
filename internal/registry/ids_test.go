package registry

import (
	"strings"
	"testing"
)

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (string, error)
		value string
		ok    bool
	}{
		{ParseTokenID, "tok_0123456789abcdef", true},
		{ParseTokenID, "tok_1", true},
		{ParseTokenID, strings.Repeat("i", MaxTokenIDLength), true},
		{ParseTokenID, strings.Repeat("i", MaxTokenIDLength+1), false},
		{ParseTokenID, "", false},
		{ParseTokenID, "..", false},
		{ParseTokenID, "../namespaces/acme", false},
		{ParseTokenID, "tok 1", false},
		{ParseKeyID, "3AA5C34371567BD2", true},
		{ParseKeyID, "3aa5c34371567bd2", true},
		{ParseKeyID, strings.Repeat("A", MaxKeyIDLength), true},
		{ParseKeyID, strings.Repeat("A", MaxKeyIDLength+1), false},
		{ParseKeyID, "", false},
		{ParseKeyID, "../../x", false},
		{ParseKeyID, "3AA5C34371567BDZ", false},
	} {
		_, err := tc.parse(tc.value)
		if (err == nil) != tc.ok || err != nil && (!IsKind(err, Invalid) || len(err.Error()) > 200) {
			t.Errorf("%.20q: %v, want ok=%v", tc.value, err, tc.ok)
		}
	}
}
