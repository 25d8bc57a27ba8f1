package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

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
