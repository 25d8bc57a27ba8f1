package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/difyops/terraform-provider-dify/dify"
)

func TestDescribeAPIError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &dify.APIError{Status: 404, Code: "not_found", Message: "Conversation Not Exists."})
	got := describeError(err, "Next step here.")
	for _, want := range []string{"HTTP 404", `"not_found"`, "Conversation Not Exists.", "Next step here."} {
		if !strings.Contains(got, want) {
			t.Errorf("detail %q lacks %q", got, want)
		}
	}
}

func TestDescribeErrorHints(t *testing.T) {
	cases := map[int]string{401: EnvAPIKey, 403: "disabled", 429: "retry_max_attempts", 503: "server-side"}
	for status, want := range cases {
		got := describeError(&dify.APIError{Status: status, Code: "x", Message: "m"}, "")
		if !strings.Contains(got, want) {
			t.Errorf("status %d: %q lacks %q", status, got, want)
		}
	}
	if got := describeError(&dify.APIError{Status: 400, Code: "invalid_param", Message: "bad", Params: "name"}, ""); !strings.Contains(got, `parameter "name"`) {
		t.Errorf("params not shown: %q", got)
	}
	if got := describeError(errors.New("dial tcp: refused"), ""); !strings.Contains(got, "base_url") || !strings.Contains(got, "refused") {
		t.Errorf("transport error detail %q", got)
	}
	if got := describeError(context.DeadlineExceeded, ""); !strings.Contains(got, "in time") {
		t.Errorf("deadline detail %q", got)
	}
}

func TestRedactorNeverLeaksKey(t *testing.T) {
	const key = "app-SuperSecretKey123"
	r := redactor(key)
	var diags diag.Diagnostics
	r.addError(&diags, "Unable to x", errors.New("proxy echoed Authorization: Bearer "+key), "next "+key)
	for _, d := range diags {
		if strings.Contains(d.Summary()+d.Detail(), key) {
			t.Fatalf("key leaked: %q", d.Detail())
		}
		if !strings.Contains(d.Detail(), "[redacted api key]") {
			t.Fatalf("no redaction marker: %q", d.Detail())
		}
	}
	// Too-short "keys" are not used for replacement (would mangle text).
	if got := redactor("ab").clean("abc"); got != "abc" {
		t.Fatalf("short key replaced text: %q", got)
	}
}
