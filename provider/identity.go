package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resource identity (Terraform >= 1.12) names an object by the values Dify
// needs to find it, so `import { identity = {...} }` and `terraform query`
// can address it without a provider-specific id string. Older Terraform
// versions ignore identities; the provider sets them either way.

var (
	_ resource.ResourceWithIdentity = &conversationResource{}
	_ resource.ResourceWithIdentity = &fileResource{}
)

// conversationIdentity is dify_conversation's identity: conversations are
// scoped to an end user (docs/api §5), so the id alone cannot find one.
type conversationIdentity struct {
	User types.String `tfsdk:"user"`
	ID   types.String `tfsdk:"id"`
}

func (r *conversationResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"user": identityschema.StringAttribute{RequiredForImport: true,
			Description: "End user the conversation belongs to."},
		"id": identityschema.StringAttribute{RequiredForImport: true,
			Description: "Conversation id (a UUID)."},
	}}
}

// setConversationIdentity records (user, id) as the resource identity. A nil
// identity (no identity support in the request) is left alone.
func setConversationIdentity(ctx context.Context, into *tfsdk.ResourceIdentity, user, id string) diag.Diagnostics {
	if into == nil {
		return nil
	}
	return into.Set(ctx, conversationIdentity{User: types.StringValue(user), ID: types.StringValue(id)})
}

// fileIdentity is dify_file's identity.
type fileIdentity struct {
	ID types.String `tfsdk:"id"`
}

func (r *fileResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"id": identityschema.StringAttribute{RequiredForImport: true,
			Description: "The upload's id."},
	}}
}

func setFileIdentity(ctx context.Context, into *tfsdk.ResourceIdentity, id string) diag.Diagnostics {
	if into == nil {
		return nil
	}
	return into.Set(ctx, fileIdentity{ID: types.StringValue(id)})
}
