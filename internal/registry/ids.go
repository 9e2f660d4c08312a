package registry

// ParseTokenID checks the ID of a token in a request: at most
// MaxTokenIDLength bytes of ASCII letters, digits, "_" and "-" (the IDs
// Trove makes are "tok_" and 16 hex digits). Anything else, "/" and ".."
// above all, is refused before it reaches a path.
func ParseTokenID(s string) (string, error) {
	if err := TokenIDLimit.Check(s); err != nil {
		return "", err
	}
	if s == "" || !allBytes(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }) {
		return "", Errorf(Invalid, "invalid token ID %s: want the ID that trove token list shows, such as tok_0123456789abcdef", quote(s))
	}
	return s, nil
}

// ParseKeyID checks the ID of a signing key in a request: at most
// MaxKeyIDLength hex digits (a key ID is 16, as trove key list shows it;
// the API compares them without regard to case). Anything else is refused
// before it reaches a path.
func ParseKeyID(s string) (string, error) {
	if err := KeyIDLimit.Check(s); err != nil {
		return "", err
	}
	if s == "" || !allBytes(s, isHex) {
		return "", Errorf(Invalid, "invalid key ID %s: want the 16 hex digits that trove key list shows, such as 3AA5C34371567BD2", quote(s))
	}
	return s, nil
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
