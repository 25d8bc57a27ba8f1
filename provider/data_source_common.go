package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// dataSourceBase carries the provider data every data source needs.
type dataSourceBase struct{ data *providerData }

func (d *dataSourceBase) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = configureData(req.ProviderData, &resp.Diagnostics)
}

// ready reports a diagnostic when the data source runs before the provider
// was configured (which Terraform only does for a broken configuration).
func (d *dataSourceBase) ready(diags *diag.Diagnostics) bool {
	if d.data == nil {
		diags.AddError("Dify provider not configured",
			"The data source was read before the dify provider was configured. Check the provider block for errors.")
		return false
	}
	return true
}

func stringList(xs []string) types.List {
	vals := make([]attr.Value, 0, len(xs))
	for _, x := range xs {
		vals = append(vals, types.StringValue(x))
	}
	return types.ListValueMust(types.StringType, vals)
}

// stringMap renders a JSON object of arbitrary values as map(string): strings
// stay as they are, anything else becomes its JSON text.
func stringMap(m map[string]any) types.Map {
	vals := make(map[string]attr.Value, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			vals[k] = types.StringValue(s)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("null")
		}
		vals[k] = types.StringValue(string(b))
	}
	return types.MapValueMust(types.StringType, vals)
}
