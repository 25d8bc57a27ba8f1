package provider

import (
	"encoding/json"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

// inputsFromHistory turns the first message's stored inputs (docs/api §6) back
// into the string map dify_conversation.inputs is configured with. Dify
// stores a key for every form variable: the value given, else the form's
// default, else null (BaseAppGenerator._prepare_user_inputs and
// _validate_inputs), so nulls are dropped; no inputs
// at all reads back as null, like an unset argument. Strings come back as
// sent; numbers and booleans, which the form may have converted, are written
// the way the configuration would spell them.
func inputsFromHistory(in map[string]any) types.Map {
	vals := map[string]attr.Value{}
	for k, v := range in {
		switch x := v.(type) {
		case nil:
			continue
		case string:
			vals[k] = types.StringValue(x)
		case float64:
			vals[k] = types.StringValue(strconv.FormatFloat(x, 'f', -1, 64))
		case bool:
			vals[k] = types.StringValue(strconv.FormatBool(x))
		default:
			b, err := json.Marshal(x)
			if err != nil {
				continue
			}
			vals[k] = types.StringValue(string(b))
		}
	}
	if len(vals) == 0 {
		return types.MapNull(types.StringType)
	}
	return types.MapValueMust(types.StringType, vals)
}

// filesFromHistory lists the upload ids of the first message's local files,
// in the order Dify returns them (the order they were sent). Remote-URL files
// have no upload id and cannot be expressed in dify_conversation.files, so
// they are left out, as are files the assistant produced (belongs_to
// "assistant"); a message without uploads reads back as null.
func filesFromHistory(files []dify.MessageFile) types.List {
	var vals []attr.Value
	for _, f := range files {
		if f.BelongsTo != nil && *f.BelongsTo == "assistant" {
			continue
		}
		if f.UploadFileID != nil && *f.UploadFileID != "" {
			vals = append(vals, types.StringValue(*f.UploadFileID))
		}
	}
	if len(vals) == 0 {
		return types.ListNull(types.StringType)
	}
	return types.ListValueMust(types.StringType, vals)
}
