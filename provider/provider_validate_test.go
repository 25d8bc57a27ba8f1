package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// providerConfigType is the provider block's type on the wire.
var providerConfigType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"base_url": tftypes.String, "api_key": tftypes.String, "user": tftypes.String,
	"retry_max_attempts": tftypes.Number, "retry_max_delay": tftypes.String, "request_timeout": tftypes.String,
}}

// validateProvider sends the provider block vals (the rest null) through
// ValidateProviderConfig, the call `terraform validate` makes, and returns
// "summary: detail" per diagnostic.
func validateProvider(t *testing.T, vals map[string]tftypes.Value) []string {
	t.Helper()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]tftypes.Value{}
	for name, typ := range providerConfigType.AttributeTypes {
		all[name] = tftypes.NewValue(typ, nil)
		if v, ok := vals[name]; ok {
			all[name] = v
		}
	}
	cfg, err := tfprotov6.NewDynamicValue(providerConfigType, tftypes.NewValue(providerConfigType, all))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.ValidateProviderConfig(context.Background(), &tfprotov6.ValidateProviderConfigRequest{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range resp.Diagnostics {
		out = append(out, d.Summary+": "+d.Detail)
	}
	return out
}

// Provider-block values that can never work fail at validate, with the
// message Configure gives at plan; unknown and unset values do not.
func TestProviderValidateConfig(t *testing.T) {
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	num := func(n int) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	unknownString := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	for name, tc := range map[string]struct {
		vals  map[string]tftypes.Value
		model providerModel // the same value for Configure's check
	}{
		"retry_max_attempts = 0": {map[string]tftypes.Value{"retry_max_attempts": num(0)},
			providerModel{RetryMaxAttempts: types.Int64Value(0)}},
		"retry_max_attempts = 21": {map[string]tftypes.Value{"retry_max_attempts": num(21)},
			providerModel{RetryMaxAttempts: types.Int64Value(21)}},
		`request_timeout = "500ms"`: {map[string]tftypes.Value{"request_timeout": str("500ms")},
			providerModel{RequestTimeout: types.StringValue("500ms")}},
		`retry_max_delay = "soon"`: {map[string]tftypes.Value{"retry_max_delay": str("soon")},
			providerModel{RetryMaxDelay: types.StringValue("soon")}},
		`base_url = "ftp://..."`: {map[string]tftypes.Value{"base_url": str("ftp://dify.example.com/v1")},
			providerModel{BaseURL: types.StringValue("ftp://dify.example.com/v1")}},
		`api_key = ""`: {map[string]tftypes.Value{"api_key": str(" ")},
			providerModel{APIKey: types.StringValue(" ")}},
	} {
		t.Run(name, func(t *testing.T) {
			got := validateProvider(t, tc.vals)
			if len(got) != 1 {
				t.Fatalf("validate gave %d diagnostics, want 1: %q", len(got), got)
			}
			// Configure's check on the same value (absent attributes are
			// the zero, null values), with a key so only the value under
			// test is wrong.
			m := tc.model
			if m.APIKey.IsNull() {
				m.APIKey = types.StringValue("app-k")
			}
			_, diags := resolveSettings(m, func(string) string { return "" })
			if !containsDiag(diags, got[0]) {
				t.Errorf("validate said %q, Configure said %q", got[0], diags)
			}
		})
	}

	t.Run("unknown and unset values", func(t *testing.T) {
		got := validateProvider(t, map[string]tftypes.Value{
			"base_url": unknownString, "api_key": unknownString, "retry_max_delay": unknownString, "request_timeout": unknownString,
			"retry_max_attempts": tftypes.NewValue(tftypes.Number, tftypes.UnknownValue),
		})
		if len(got) != 0 {
			t.Errorf("unknown values failed validate: %q", got)
		}
		if got := validateProvider(t, nil); len(got) != 0 {
			t.Errorf("an empty provider block failed validate (the environment may supply every value): %q", got)
		}
	})

	t.Run("good values", func(t *testing.T) {
		got := validateProvider(t, map[string]tftypes.Value{"base_url": str("http://127.0.0.1:5001/v1"), "api_key": str("app-k"),
			"retry_max_attempts": num(1), "retry_max_delay": str("0s"), "request_timeout": str("1s")})
		if len(got) != 0 {
			t.Errorf("good values failed validate: %q", got)
		}
	})
}

func containsDiag(diags diag.Diagnostics, want string) bool {
	for _, d := range diags {
		if d.Summary()+": "+d.Detail() == want {
			return true
		}
	}
	return strings.TrimSpace(want) == ""
}
