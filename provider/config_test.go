package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

func nullModel() providerModel {
	return providerModel{
		BaseURL: types.StringNull(), APIKey: types.StringNull(), User: types.StringNull(),
		RetryMaxAttempts: types.Int64Null(), RetryMaxDelay: types.StringNull(), RequestTimeout: types.StringNull(),
	}
}

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestResolveSettingsDefaults(t *testing.T) {
	s, diags := resolveSettings(nullModel(), envOf(map[string]string{EnvAPIKey: "app-env"}))
	if diags.HasError() {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	want := settings{BaseURL: dify.DefaultBaseURL, APIKey: "app-env", User: DefaultUser,
		RetryMaxAttempts: DefaultRetryMaxAttempts, RetryMaxDelay: DefaultRetryMaxDelay, RequestTimeout: DefaultRequestTimeout}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

func TestResolveSettingsEnvironment(t *testing.T) {
	env := envOf(map[string]string{
		EnvBaseURL: "http://127.0.0.1:5001/v1", EnvAPIKey: "app-env", EnvUser: "env-user",
		EnvRetryMaxAttempts: "2", EnvRetryMaxDelay: "250ms", EnvRequestTimeout: "5s",
	})
	s, diags := resolveSettings(nullModel(), env)
	if diags.HasError() {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	want := settings{BaseURL: "http://127.0.0.1:5001/v1", APIKey: "app-env", User: "env-user",
		RetryMaxAttempts: 2, RetryMaxDelay: 250 * time.Millisecond, RequestTimeout: 5 * time.Second}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

func TestResolveSettingsConfigWinsOverEnvironment(t *testing.T) {
	env := envOf(map[string]string{
		EnvBaseURL: "http://env.example/v1", EnvAPIKey: "app-env", EnvUser: "env-user",
		EnvRetryMaxAttempts: "2", EnvRetryMaxDelay: "250ms", EnvRequestTimeout: "5s",
	})
	m := providerModel{
		BaseURL: types.StringValue("https://cfg.example/v1"), APIKey: types.StringValue("app-cfg"),
		User: types.StringValue("cfg-user"), RetryMaxAttempts: types.Int64Value(7),
		RetryMaxDelay: types.StringValue("3s"), RequestTimeout: types.StringValue("9s"),
	}
	s, diags := resolveSettings(m, env)
	if diags.HasError() {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	want := settings{BaseURL: "https://cfg.example/v1", APIKey: "app-cfg", User: "cfg-user",
		RetryMaxAttempts: 7, RetryMaxDelay: 3 * time.Second, RequestTimeout: 9 * time.Second}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

// hasAttrError reports whether diags holds an error at attr whose text
// mentions every word.
// hasAttrError reports an error at attr mentioning every word; attr ""
// wants an error attached to no attribute.
func hasAttrError(diags diag.Diagnostics, attr string, words ...string) bool {
	for _, d := range diags.Errors() {
		wp, ok := d.(diag.DiagnosticWithPath)
		if attr == "" {
			if ok && !wp.Path().Equal(path.Empty()) {
				continue
			}
		} else if !ok || !wp.Path().Equal(path.Root(attr)) {
			continue
		}
		text := d.Summary() + " " + d.Detail()
		all := true
		for _, w := range words {
			all = all && strings.Contains(text, w)
		}
		if all {
			return true
		}
	}
	return false
}

func TestResolveSettingsMissingKeyNamesEnvAndAttribute(t *testing.T) {
	_, diags := resolveSettings(nullModel(), envOf(nil))
	if !hasAttrError(diags, "api_key", "api_key", EnvAPIKey) {
		t.Fatalf("want an api_key attribute error naming %s, got %v", EnvAPIKey, diags)
	}
	// Whitespace is not a key either.
	m := nullModel()
	m.APIKey = types.StringValue("   ")
	if _, diags := resolveSettings(m, envOf(nil)); !hasAttrError(diags, "api_key", EnvAPIKey) {
		t.Fatalf("blank key accepted: %v", diags)
	}
}

func TestResolveSettingsUnknownValues(t *testing.T) {
	m := nullModel()
	m.BaseURL = types.StringUnknown()
	m.APIKey = types.StringUnknown()
	m.RetryMaxAttempts = types.Int64Unknown()
	_, diags := resolveSettings(m, envOf(map[string]string{EnvAPIKey: "app-env"}))
	for attr, env := range map[string]string{"base_url": EnvBaseURL, "api_key": EnvAPIKey, "retry_max_attempts": EnvRetryMaxAttempts} {
		if !hasAttrError(diags, attr, "Unknown", env) {
			t.Errorf("no unknown-value error for %s naming %s: %v", attr, env, diags)
		}
	}
	if diags.ErrorsCount() != 3 {
		t.Errorf("got %d errors, want 3: %v", diags.ErrorsCount(), diags)
	}
}

func TestResolveSettingsInvalidValues(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*providerModel)
		env   map[string]string
		attr  string
		words []string
	}{
		{"scheme", func(m *providerModel) { m.BaseURL = types.StringValue("ftp://x/v1") }, nil, "base_url", []string{"http or https"}},
		{"no host", func(m *providerModel) { m.BaseURL = types.StringValue("http:///v1") }, nil, "base_url", []string{"no host"}},
		// "": not attached to an attribute, since the value may hold a secret.
		{"query", func(m *providerModel) { m.BaseURL = types.StringValue("http://h/v1?x=1") }, nil, "", []string{"query"}},
		{"env base url", nil, map[string]string{EnvBaseURL: "nonsense"}, "base_url", []string{EnvBaseURL}},
		{"attempts zero", func(m *providerModel) { m.RetryMaxAttempts = types.Int64Value(0) }, nil, "retry_max_attempts", []string{"between 1"}},
		{"attempts env text", nil, map[string]string{EnvRetryMaxAttempts: "many"}, "retry_max_attempts", []string{EnvRetryMaxAttempts, "many"}},
		{"delay", func(m *providerModel) { m.RetryMaxDelay = types.StringValue("soon") }, nil, "retry_max_delay", []string{"soon"}},
		{"timeout too short", func(m *providerModel) { m.RequestTimeout = types.StringValue("10ms") }, nil, "request_timeout", []string{"at least 1s"}},
		{"timeout env", nil, map[string]string{EnvRequestTimeout: "-1s"}, "request_timeout", []string{EnvRequestTimeout}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := nullModel()
			if tc.mod != nil {
				tc.mod(&m)
			}
			env := map[string]string{EnvAPIKey: "app-key"}
			for k, v := range tc.env {
				env[k] = v
			}
			_, diags := resolveSettings(m, envOf(env))
			if !hasAttrError(diags, tc.attr, tc.words...) {
				t.Fatalf("want error at %s mentioning %v, got %v", tc.attr, tc.words, diags)
			}
		})
	}
}

// A base URL with credentials or a query is refused, and neither the
// diagnostic nor the redacted form repeats the password, user name or the
// query's values (before, user:pass@ was accepted and logged at DEBUG, and
// the query error quoted the whole URL).
func TestBaseURLSecretsAreNeverEchoed(t *testing.T) {
	for _, tc := range []struct{ raw, words string }{
		{"http://alice:hunter2-pass@dify.test/v1", "credentials"},
		{"https://alice@dify.test/v1", "credentials"},
		{"http://dify.test/v1?api_key=app-hunter2-pass", "query"},
		{"http://dify.test/v1#app-hunter2-pass", "fragment"},
		{"http://alice:hunter2-pass@dify.test:bad/v1", "not a valid URL"},
		{"http://dify.test/v1?api_key=app-hunter2-pass&alice", "query"},
	} {
		m := nullModel()
		m.BaseURL = types.StringValue(tc.raw)
		_, diags := resolveSettings(m, envOf(map[string]string{EnvAPIKey: "app-key"}))
		// Not attached to base_url: Terraform would quote the line.
		found := false
		for _, d := range diags.Errors() {
			if strings.Contains(d.Summary()+" "+d.Detail(), tc.words) {
				found = true
				if wp, ok := d.(diag.DiagnosticWithPath); ok && wp.Path().Equal(path.Root("base_url")) {
					t.Errorf("%s: the error is attached to base_url, so Terraform quotes the value", tc.raw)
				}
			}
		}
		if !found {
			t.Errorf("%s: want an error mentioning %q, got %v", tc.raw, tc.words, diags)
		}
		for _, d := range diags {
			text := d.Summary() + " " + d.Detail()
			for _, secret := range []string{"hunter2", "alice"} {
				if strings.Contains(text, secret) {
					t.Errorf("%s: diagnostic repeats %q: %s", tc.raw, secret, text)
				}
			}
		}
		if r := redactURL(tc.raw); strings.Contains(r, "hunter2") || strings.Contains(r, "alice") {
			t.Errorf("redactURL(%s) = %s", tc.raw, r)
		}
	}
	if r := redactURL("http://127.0.0.1:5001/v1"); r != `"http://127.0.0.1:5001/v1"` {
		t.Errorf("redactURL of a clean URL = %s", r)
	}
}

func TestUserAgentNamesProviderAndTerraform(t *testing.T) {
	p := &difyProvider{version: "1.2.3"}
	got := p.userAgent("1.11.4")
	for _, want := range []string{"terraform-provider-dify/1.2.3", dify.ProjectURL, "terraform/1.11.4"} {
		if !strings.Contains(got, want) {
			t.Errorf("User-Agent %q lacks %q", got, want)
		}
	}
	if strings.Contains(p.userAgent(""), "terraform/") {
		t.Errorf("empty Terraform version rendered: %q", p.userAgent(""))
	}
}
