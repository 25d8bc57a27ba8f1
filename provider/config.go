package provider

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Environment variables read by the provider block. Each one is used only when
// the matching attribute is not set in the configuration (config > env > default).
const (
	EnvBaseURL          = "DIFY_BASE_URL"
	EnvAPIKey           = "DIFY_API_KEY"
	EnvUser             = "DIFY_USER"
	EnvRetryMaxAttempts = "DIFY_RETRY_MAX_ATTEMPTS"
	EnvRetryMaxDelay    = "DIFY_RETRY_MAX_DELAY"
	EnvRequestTimeout   = "DIFY_REQUEST_TIMEOUT"
)

// Defaults applied when neither the configuration nor the environment sets a value.
const (
	DefaultUser             = "terraform"
	DefaultRetryMaxAttempts = 4
	DefaultRetryMaxDelay    = 30 * time.Second
	DefaultRequestTimeout   = 60 * time.Second
)

// settings is the provider configuration after precedence has been applied.
type settings struct {
	BaseURL          string
	APIKey           string
	User             string
	RetryMaxAttempts int
	RetryMaxDelay    time.Duration
	RequestTimeout   time.Duration
}

// providerModel is the provider block.
type providerModel struct {
	BaseURL          types.String `tfsdk:"base_url"`
	APIKey           types.String `tfsdk:"api_key"`
	User             types.String `tfsdk:"user"`
	RetryMaxAttempts types.Int64  `tfsdk:"retry_max_attempts"`
	RetryMaxDelay    types.String `tfsdk:"retry_max_delay"`
	RequestTimeout   types.String `tfsdk:"request_timeout"`
}

// unknownGuard reports every attribute whose value is not known yet. The
// client cannot be built from a value another resource will only produce
// during apply, and guessing from the environment would silently use the
// wrong app.
func unknownGuard(m providerModel) diag.Diagnostics {
	var diags diag.Diagnostics
	check := func(unknown bool, attr, env string) {
		if unknown {
			diags.AddAttributeError(path.Root(attr),
				fmt.Sprintf("Unknown Dify provider %s", attr),
				fmt.Sprintf("The provider cannot create the Dify API client because %q depends on a value that is only known after apply. "+
					"Set it to a value known at plan time, or remove it and use the %s environment variable.", attr, env))
		}
	}
	check(m.BaseURL.IsUnknown(), "base_url", EnvBaseURL)
	check(m.APIKey.IsUnknown(), "api_key", EnvAPIKey)
	check(m.User.IsUnknown(), "user", EnvUser)
	check(m.RetryMaxAttempts.IsUnknown(), "retry_max_attempts", EnvRetryMaxAttempts)
	check(m.RetryMaxDelay.IsUnknown(), "retry_max_delay", EnvRetryMaxDelay)
	check(m.RequestTimeout.IsUnknown(), "request_timeout", EnvRequestTimeout)
	return diags
}

// resolveSettings applies config > environment > default to every provider
// setting and validates the result. getenv is os.Getenv outside tests.
func resolveSettings(m providerModel, getenv func(string) string) (settings, diag.Diagnostics) {
	diags := unknownGuard(m)
	if diags.HasError() {
		return settings{}, diags
	}
	pick := func(v types.String, env string) (string, string) {
		if !v.IsNull() {
			return v.ValueString(), "the provider configuration"
		}
		if e := getenv(env); e != "" {
			return e, "the " + env + " environment variable"
		}
		return "", ""
	}

	var s settings
	var from string

	s.BaseURL, from = pick(m.BaseURL, EnvBaseURL)
	if s.BaseURL == "" {
		s.BaseURL, from = dify.DefaultBaseURL, "the default"
	}
	diags.Append(checkBaseURL(s.BaseURL, from)...)

	s.APIKey, _ = pick(m.APIKey, EnvAPIKey)
	diags.Append(checkAPIKey(s.APIKey)...)

	s.User, _ = pick(m.User, EnvUser)
	if s.User == "" {
		s.User = DefaultUser
	}

	s.RetryMaxAttempts = DefaultRetryMaxAttempts
	switch {
	case !m.RetryMaxAttempts.IsNull():
		s.RetryMaxAttempts = int(m.RetryMaxAttempts.ValueInt64())
		from = "the provider configuration"
	case getenv(EnvRetryMaxAttempts) != "":
		n, err := strconv.Atoi(strings.TrimSpace(getenv(EnvRetryMaxAttempts)))
		if err != nil {
			diags.AddAttributeError(path.Root("retry_max_attempts"), "Invalid Dify retry setting",
				fmt.Sprintf("The %s environment variable must be a whole number, got %q.", EnvRetryMaxAttempts, getenv(EnvRetryMaxAttempts)))
		}
		s.RetryMaxAttempts = n
		from = "the " + EnvRetryMaxAttempts + " environment variable"
	}
	diags.Append(checkRetryMaxAttempts(int64(s.RetryMaxAttempts), from)...)

	var d diag.Diagnostics
	s.RetryMaxDelay, d = pickDuration(m.RetryMaxDelay, getenv, EnvRetryMaxDelay, "retry_max_delay", DefaultRetryMaxDelay)
	diags.Append(d...)
	s.RequestTimeout, d = pickDuration(m.RequestTimeout, getenv, EnvRequestTimeout, "request_timeout", DefaultRequestTimeout)
	diags.Append(d...)
	return s, diags
}

// The checks below are the one definition of each provider setting's rule.
// Configure runs them on the resolved value (configuration, environment or
// default); ValidateConfig runs them on the configuration's known values,
// so `terraform validate` reports what Configure would, with the same words.

// durationMinimum is the least each duration setting accepts.
var durationMinimum = map[string]time.Duration{"retry_max_delay": 0, "request_timeout": time.Second}

// checkBaseURL checks a base URL taken from from ("the provider
// configuration", "the DIFY_BASE_URL environment variable", "the default").
func checkBaseURL(raw, from string) diag.Diagnostics {
	var diags diag.Diagnostics
	err := validateBaseURL(raw)
	if err == nil {
		return nil
	}
	summary := "Invalid Dify base URL"
	detail := fmt.Sprintf("The base URL %s (from %s) is not usable: %s. Use the Service API base including /v1, for example %q or \"http://127.0.0.1:5001/v1\".",
		redactURL(raw), from, err, dify.DefaultBaseURL)
	if mayHoldSecret(raw) {
		// Not attached to the attribute: Terraform would quote the
		// configuration line under the diagnostic, secret included.
		diags.AddError(summary, detail+" (The attribute's line is not quoted because the value may hold a secret.)")
	} else {
		diags.AddAttributeError(path.Root("base_url"), summary, detail)
	}
	return diags
}

// checkAPIKey requires a non-blank key.
func checkAPIKey(key string) diag.Diagnostics {
	var diags diag.Diagnostics
	if strings.TrimSpace(key) == "" {
		diags.AddAttributeError(path.Root("api_key"), "Missing Dify API key",
			"The provider cannot create the Dify API client because no API key was found. "+
				"Set the api_key attribute in the provider block or the "+EnvAPIKey+" environment variable "+
				"to the app's Service API key (it looks like \"app-...\"; find it under the app's API Access page). "+
				"Prefer the environment variable so the key stays out of your configuration files.")
	}
	return diags
}

// checkRetryMaxAttempts bounds retry_max_attempts.
func checkRetryMaxAttempts(n int64, from string) diag.Diagnostics {
	var diags diag.Diagnostics
	if n < 1 || n > 20 {
		diags.AddAttributeError(path.Root("retry_max_attempts"), "Invalid Dify retry setting",
			fmt.Sprintf("retry_max_attempts (from %s) must be between 1 (no retries) and 20, got %d.", from, n))
	}
	return diags
}

// parseSettingDuration parses the duration setting attr.
func parseSettingDuration(raw, from, attr string) (time.Duration, diag.Diagnostics) {
	var diags diag.Diagnostics
	minimum := durationMinimum[attr]
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil || d < minimum {
		diags.AddAttributeError(path.Root(attr), "Invalid Dify provider duration",
			fmt.Sprintf("%s (from %s) must be a Go duration such as \"30s\" or \"2m\" of at least %s, got %q.", attr, from, minimum, raw))
	}
	return d, diags
}

// validateConfigured runs the checks on the provider block's known values
// (ValidateConfig). Unknown values (from variables or resources not known
// yet) and unset ones (the environment may supply them) are left to
// Configure.
func validateConfigured(m providerModel) diag.Diagnostics {
	const from = "the provider configuration"
	known := func(v interface {
		IsNull() bool
		IsUnknown() bool
	}) bool {
		return !v.IsNull() && !v.IsUnknown()
	}
	var diags diag.Diagnostics
	if known(m.BaseURL) {
		diags.Append(checkBaseURL(m.BaseURL.ValueString(), from)...)
	}
	if known(m.APIKey) {
		diags.Append(checkAPIKey(m.APIKey.ValueString())...)
	}
	if known(m.RetryMaxAttempts) {
		diags.Append(checkRetryMaxAttempts(m.RetryMaxAttempts.ValueInt64(), from)...)
	}
	for attr, v := range map[string]types.String{"retry_max_delay": m.RetryMaxDelay, "request_timeout": m.RequestTimeout} {
		if known(v) {
			_, d := parseSettingDuration(v.ValueString(), from, attr)
			diags.Append(d...)
		}
	}
	return diags
}

func pickDuration(v types.String, getenv func(string) string, env, attr string, def time.Duration) (time.Duration, diag.Diagnostics) {
	raw, from := "", ""
	switch {
	case !v.IsNull():
		raw, from = v.ValueString(), "the provider configuration"
	case getenv(env) != "":
		raw, from = getenv(env), "the "+env+" environment variable"
	default:
		return def, nil
	}
	d, diags := parseSettingDuration(raw, from, attr)
	if diags.HasError() {
		return def, diags
	}
	return d, nil
}

// validateBaseURL checks a base URL. Its errors never repeat the URL or
// any part of it, since a mistyped base URL can carry a secret.
func validateBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole value, credentials included.
		return fmt.Errorf("it is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("the scheme must be http or https")
	}
	if u.User != nil {
		return fmt.Errorf("it carries credentials (user:password@); Dify authenticates with the app's API key only, so set api_key (or %s) and remove them from the URL", EnvAPIKey)
	}
	if u.Host == "" {
		return fmt.Errorf("it has no host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("it must not carry a query or fragment (an API key belongs in api_key or %s)", EnvAPIKey)
	}
	return nil
}

// mayHoldSecret reports whether a base URL has a part a secret is typed
// into by mistake (user:password@, a query, a fragment) or does not parse,
// so no part of it may be shown, by the provider or by Terraform.
func mayHoldSecret(raw string) bool {
	u, err := url.Parse(raw)
	return err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != ""
}

// redactURL renders a base URL for diagnostics and logs: scheme, host and
// path, with the user name and password, the query and the fragment replaced,
// so a secret typed into the wrong place is never repeated. A value that
// does not parse is not shown at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(not shown: it does not parse as a URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED" // a bare key (?app-…) is as secret as a value
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = "REDACTED", ""
	}
	return fmt.Sprintf("%q", u.String())
}
