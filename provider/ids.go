package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/difyops/terraform-provider-dify/dify"
)

// Dify names conversations, messages, uploads, annotations and end users by
// UUIDs. An id that is not one can only meet a 404 at apply, after other
// resources of the plan (or the resource that triggers an action) were
// already made, so ids are checked at plan time, in attributes, import ids
// and identities alike.

// exampleUUID is the id the diagnostics show.
const exampleUUID = "0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11"

// checkUUID says what is wrong with id as the Dify id of what ("" when it is
// one).
func checkUUID(what, id string) string {
	if dify.IsUUID(id) {
		return ""
	}
	return fmt.Sprintf("%q is not a Dify %s id: Dify's ids are UUIDs such as %s (the value of the resource's or data source's id attribute).", id, what, exampleUUID)
}

// uuidValidator checks a string attribute that holds a Dify id.
type uuidValidator struct{ what string }

// isUUID is the validator for an attribute holding the id of what
// ("conversation", "message", ...).
func isUUID(what string) validator.String { return uuidValidator{what} }

func (v uuidValidator) Description(context.Context) string {
	return "must be a " + v.what + " id (a UUID)"
}

func (v uuidValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v uuidValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if msg := checkUUID(v.what, req.ConfigValue.ValueString()); msg != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+v.what+" id", msg)
	}
}

// parseUserScopedID splits an import id USER/ID or ID, where USER (an end
// user string of the app's choosing) may itself contain slashes and ID is a
// UUID. what names the object ("conversation"), form the id's form for the
// messages ("USER/CONVERSATION_ID").
func parseUserScopedID(raw, what, form string) (user, id string, err error) {
	raw = strings.TrimSpace(raw)
	id = raw
	if i := strings.LastIndex(raw, "/"); i >= 0 {
		user, id = raw[:i], raw[i+1:]
		if user == "" {
			return "", "", fmt.Errorf("import id %q has an empty user before the slash; use %s or just the %s id", raw, form, what)
		}
	}
	if id == "" {
		return "", "", fmt.Errorf("import id %q does not end in a %s id; use %s, e.g. alice/%s", raw, what, form, exampleUUID)
	}
	if !dify.IsUUID(id) {
		hint := ""
		// "frontdesk/<uuid>/extra": the id is in the middle, not last.
		parts := strings.Split(raw, "/")
		for i, p := range parts[:len(parts)-1] {
			if dify.IsUUID(p) {
				hint = fmt.Sprintf(" The id %s is followed by %q: did you mean %q?", p, "/"+strings.Join(parts[i+1:], "/"), strings.Join(parts[:i+1], "/"))
				break
			}
		}
		return "", "", fmt.Errorf("import id %q: %q after the last slash is not a Dify %s id (a UUID such as %s). Use %s; the user may contain slashes, the id is always last.%s",
			raw, id, what, exampleUUID, form, hint)
	}
	return user, id, nil
}

// importForms is the id each importable resource takes, as its
// examples/resources/<type>/import.sh documents it (a test keeps the two in
// step), with an example.
var importForms = map[string]struct{ form, example string }{
	"dify_conversation":     {"USER/CONVERSATION_ID or CONVERSATION_ID", "alice/" + exampleUUID},
	"dify_annotation":       {"ANNOTATION_ID", "6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"},
	"dify_annotation_reply": {annotationReplyID, annotationReplyID},
	"dify_message_feedback": {"USER/MESSAGE_ID", "alice/" + exampleUUID},
}

// importIDGiven reports whether an import names its object by an id (false
// for an import by identity, Terraform >= 1.12, which leaves the id empty).
// A blank id without an identity gets the one error every resource gives: it
// is almost always an unset shell variable (`terraform import ADDR "$ID"`),
// and without this check it surfaced as the framework's "Value Conversion
// Error" from reading the absent identity.
func importIDGiven(typeName string, req resource.ImportStateRequest, resp *resource.ImportStateResponse) (byID, ok bool) {
	if req.Identity != nil && !req.Identity.Raw.IsNull() && req.ID == "" {
		return false, true
	}
	if strings.TrimSpace(req.ID) != "" {
		return true, true
	}
	f := importForms[typeName]
	resp.Diagnostics.AddError("Empty import id",
		fmt.Sprintf("The import id for %s is empty. Import it with `terraform import %s.NAME %s` (for example %s), "+
			"or give an id or identity in an import block. An empty id usually comes from a shell variable that is not set, "+
			"as in `terraform import %s.NAME \"$ID\"` with ID unset: check the variable before running the command.",
			typeName, typeName, f.form, f.example, typeName))
	return false, false
}
