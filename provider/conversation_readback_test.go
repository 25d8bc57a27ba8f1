package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

func TestInputsFromHistory(t *testing.T) {
	got := inputsFromHistory(map[string]any{
		"city": "Berlin", "nights": 3.0, "ratio": 0.25, "flag": true, "unset": nil, "tags": []any{"a"},
	})
	want := types.MapValueMust(types.StringType, map[string]attr.Value{
		"city": types.StringValue("Berlin"), "nights": types.StringValue("3"), "ratio": types.StringValue("0.25"),
		"flag": types.StringValue("true"), "tags": types.StringValue(`["a"]`),
	})
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Nothing given (or only nulls, as Dify stores absent form variables)
	// reads back as null, like an unset argument.
	if v := inputsFromHistory(map[string]any{"unset": nil}); !v.IsNull() {
		t.Errorf("only nulls gave %v", v)
	}
	if v := inputsFromHistory(nil); !v.IsNull() {
		t.Errorf("no inputs gave %v", v)
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
