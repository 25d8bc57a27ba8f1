package provider

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

func TestInputsFromHistory(t *testing.T) {
	got := inputsFromHistory(map[string]any{
		"city": "Berlin", "nights": 3.0, "ratio": 0.25, "flag": true, "unset": nil, "tags": []any{"a"},
	}, nil)
	want := types.MapValueMust(types.StringType, map[string]attr.Value{
		"city": types.StringValue("Berlin"), "nights": types.StringValue("3"), "ratio": types.StringValue("0.25"),
		"flag": types.StringValue("true"), "tags": types.StringValue(`["a"]`),
	})
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Nothing given (or only nulls, as Dify stores absent form variables)
	// reads back as null, like an unset argument.
	if v := inputsFromHistory(map[string]any{"unset": nil}, nil); !v.IsNull() {
		t.Errorf("only nulls gave %v", v)
	}
	if v := inputsFromHistory(nil, nil); !v.IsNull() {
		t.Errorf("no inputs gave %v", v)
	}
}

// testForm is the built-in app's form (cassettes/app.yaml) plus a number
// and a checkbox.
func testForm(t *testing.T) []dify.UserInputFormItem {
	t.Helper()
	var p dify.AppParameters
	err := json.Unmarshal([]byte(`{"user_input_form":[
		{"text-input":{"variable":"home_city","required":false,"default":""}},
		{"select":{"variable":"budget","required":false,"default":"medium","options":["low","medium","high"]}},
		{"number":{"variable":"nights","required":false,"default":2}},
		{"checkbox":{"variable":"insured","required":false}},
		{"text-input":{"variable":"name","required":true}}]}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	return p.UserInputForm
}

// TestInputsFromHistoryLeavesOutWhatUnsetStores: with the form known, the
// values Dify fills in for variables left out (the default, "", null) are
// not read back, so importing a conversation created without inputs gives
// null, and one created with some gives exactly those.
func TestInputsFromHistoryLeavesOutWhatUnsetStores(t *testing.T) {
	form := testForm(t)
	stored := map[string]any{"home_city": "", "budget": "medium", "nights": 2.0, "insured": nil, "name": "Ann"}
	got := inputsFromHistory(stored, form)
	want := types.MapValueMust(types.StringType, map[string]attr.Value{"name": types.StringValue("Ann")})
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	stored = map[string]any{"home_city": "Lyon", "budget": "", "nights": 3.0, "insured": true, "name": "medium"}
	got = inputsFromHistory(stored, form)
	want = types.MapValueMust(types.StringType, map[string]attr.Value{"home_city": types.StringValue("Lyon"), "budget": types.StringValue(""),
		"nights": types.StringValue("3"), "insured": types.StringValue("true"), "name": types.StringValue("medium")})
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestInputsDifference: configurations are compared by what Dify stores.
func TestInputsDifference(t *testing.T) {
	form := testForm(t)
	for _, c := range []struct {
		name       string
		cfg, state map[string]string
		want       string
	}{
		{"explicit default against unset", map[string]string{"budget": "medium", "nights": "2.0"}, nil, ""},
		{"number spelling", map[string]string{"nights": "3.0"}, map[string]string{"nights": "3"}, ""},
		{"checkbox spelling", map[string]string{"insured": "yes"}, map[string]string{"insured": "true"}, ""},
		{"a variable the form lacks", map[string]string{"extra": "x"}, nil, ""},
		{"a real change", map[string]string{"budget": "low"}, nil, `  inputs.budget: configured "low", Dify stored "medium"`},
		{"empty is not the default", map[string]string{"budget": ""}, nil, `  inputs.budget: configured no value, Dify stored "medium"`},
		{"removed", nil, map[string]string{"home_city": "Lyon"}, `  inputs.home_city: configured no value, Dify stored "Lyon"`},
	} {
		if got := inputsDifference(form, c.cfg, c.state); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFilesFromHistory(t *testing.T) {
	user, assistant := "user", "assistant"
	up1, up2, tool := "u-1", "u-2", "t-1"
	got := filesFromHistory([]dify.MessageFile{
		{UploadFileID: &up1, BelongsTo: &user},
		{TransferMethod: dify.TransferRemoteURL, BelongsTo: &user}, // by URL: no upload id
		{UploadFileID: &tool, BelongsTo: &assistant},               // the agent's own file
		{UploadFileID: &up2},
	})
	want := types.ListValueMust(types.StringType, []attr.Value{types.StringValue("u-1"), types.StringValue("u-2")})
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if v := filesFromHistory(nil); !v.IsNull() {
		t.Errorf("no files gave %v", v)
	}
}
