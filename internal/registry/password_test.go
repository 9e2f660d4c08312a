package registry

import (
	"strings"
	"testing"
)

func TestCheckPassword(t *testing.T) {
	tests := map[string]bool{
		"0123456789":                             true,
		"ünïcödé-pässwörd":                       true,
		"short":                                  false,
		"123456789":                              false,
		" leading space ok?":                     false,
		"trailing space \n":                      false,
		strings.Repeat("a", MaxPasswordLength):   true,
		strings.Repeat("a", MaxPasswordLength+1): false,
		"bad utf8 \xff\xfe padding":              false,
	}
	for pw, ok := range tests {
		err := CheckPassword(pw)
		if (err == nil) != ok {
			t.Errorf("CheckPassword(%.20q) = %v, want ok=%v", pw, err, ok)
		}
		if err != nil && (!IsKind(err, Invalid) || len(pw) >= 8 && strings.Contains(err.Error(), pw)) {
			t.Errorf("CheckPassword(%.20q) error %q: want Invalid, without the password", pw, err)
		}
	}
}
