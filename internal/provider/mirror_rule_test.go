package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
)

// TestMirrorRuleValidatedAtPlan: a malformed allow rule fails validation
// (at plan), not only when the server refuses it at apply.
func TestMirrorRuleValidatedAtPlan(t *testing.T) {
	rule := resourceMirrorUpstream().Schema["allow"].Elem.(*schema.Resource).Schema
	for _, c := range []struct {
		field, value string
		ok           bool
	}{
		{"provider", "hashicorp/*", true}, {"provider", "*/*", true}, {"provider", "hashicorp/aws", true},
		{"provider", "hashicorp", false}, {"provider", "a/b/c", false}, {"provider", "hashi corp/aws", false},
		{"versions", "~> 5.0", true}, {"versions", ">= 1.2, < 2.0", true}, {"versions", "five", false},
	} {
		_, errs := rule[c.field].ValidateFunc(c.value, "allow.0."+c.field)
		if (len(errs) == 0) != c.ok {
			t.Errorf("%s = %q: errors %v, want ok=%v", c.field, c.value, errs, c.ok)
		}
	}
}
