package httpjson

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHeaderNameKey(t *testing.T) {
	n := HeaderName{Canonical: "X-Terraform-Get", Wire: "x-terraform-get"}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if got := n.Key(r); got != "X-Terraform-Get" {
		t.Errorf("HTTP/1.1: key %q, want the canonical name", got)
	}
	r.ProtoMajor, r.ProtoMinor, r.Proto = 2, 0, "HTTP/2.0"
	if got := n.Key(r); got != "x-terraform-get" {
		t.Errorf("HTTP/2: key %q, want the wire name", got)
	}
}
