package registry

import "testing"

func TestParseGitURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://git.example.com/acme/net.git": true,
		"http://127.0.0.1:8080/net":            true,
		"git://git.example.com/net":            true,
		"ssh://git@git.example.com:2222/net":   true,
		"git@git.example.com:acme/net.git":     true,
		"git.example.com:acme/net.git":         true,
		"":                                     false,
		"file:///etc":                          false,
		"FILE:///etc":                          false,
		"/srv/git/net":                         false,
		"./net":                                false,
		"net":                                  false,
		"ext::sh -c id":                        false,
		"ext::sh":                              false,
		"fd::3":                                false,
		"--upload-pack=touch /tmp/x":           false,
		"-oProxyCommand=id:x":                  false,
		"ssh://-oProxyCommand=id/x":            false,
		"ssh://git@-oProxyCommand=id/x":        false,
		"ssh://-oProxyCommand@host/x":          false,
		"git@-oProxyCommand=id:x":              false,
		"-git@host:x":                          false,
		"git@host:-x":                          false,
		"https://host/--upload-pack=x":         false,
		"https://u:p@host/x":                   false,
		"https://u@host/x":                     false,
		"https://host/x?q=1":                   false,
		"https://host/x#f":                     false,
		"https://host/a b":                     false,
		"https://host/a\x00b":                  false,
		"https://host/a\nb":                    false,
		"gopher://host/x":                      false,
		"https:///x":                           false,
		"https://host/" + string(make([]byte, MaxGitURLLength)): false,
	} {
		if _, err := ParseGitURL(raw); (err == nil) != ok {
			t.Errorf("ParseGitURL(%q) = %v, want ok %v", Elide(raw), err, ok)
		}
	}
}

func TestParseGitSubdir(t *testing.T) {
	for dir, want := range map[string]string{
		"": "", ".": "", "modules/net": "modules/net", "modules/net/": "modules/net",
		"..": "!", "../x": "!", "a/../b": "!", "a/./b": "!", "/etc": "!", "a//b": "!", `a\b`: "!",
		".git": "!", "a/.git/hooks": "!", "a\x00": "!",
	} {
		got, err := ParseGitSubdir(dir)
		if want == "!" {
			if err == nil {
				t.Errorf("ParseGitSubdir(%q) = %q, want an error", dir, got)
			}
		} else if err != nil || got != want {
			t.Errorf("ParseGitSubdir(%q) = %q, %v; want %q", dir, got, err, want)
		}
	}
}

func TestGitTagVersion(t *testing.T) {
	for _, tc := range []struct{ tag, prefix, want string }{
		{"v1.2.0", "", "1.2.0"},
		{"1.2.0", "", "1.2.0"},
		{"v1.3.0-rc.1", "", "1.3.0-rc.1"},
		{"v1.3.0+build.5", "", "1.3.0+build.5"},
		{"network/v1.2.0", "network/", "1.2.0"},
		{"v1.2.0", "network/", ""},
		{"network/v1.2.0", "", ""},
		{"vv1.2.0", "", ""},
		{"V1.2.0", "", ""},
		{"v1.2", "", ""},
		{"v01.2.0", "", ""},
		{"latest", "", ""},
		{"v", "", ""},
	} {
		got, ok := GitTagVersion(tc.tag, tc.prefix)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("GitTagVersion(%q, %q) = %q, %v; want %q", tc.tag, tc.prefix, got, ok, tc.want)
		}
	}
}
