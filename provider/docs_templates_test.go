package provider

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/list"
)

// The action and list resource pages are hand-written templates, because
// tfplugindocs renders their schemas only with a Terraform >= 1.14 (the docs
// stage uses whichever Terraform the acceptance tests use). These tests keep
// each page's argument list equal to the schema.

func TestDocsTemplate_chatAction(t *testing.T) {
	var resp action.SchemaResponse
	NewChatAction().Schema(context.Background(), action.SchemaRequest{}, &resp)
	names := make([]string, 0, len(resp.Schema.Attributes))
	for n := range resp.Schema.Attributes {
		names = append(names, n)
	}
	checkTemplateArguments(t, "../templates/actions/chat.md.tmpl", names)
}

func TestDocsTemplate_conversationList(t *testing.T) {
	var resp list.ListResourceSchemaResponse
	NewConversationListResource().ListResourceConfigSchema(context.Background(), list.ListResourceSchemaRequest{}, &resp)
	names := make([]string, 0, len(resp.Schema.Attributes))
	for n := range resp.Schema.Attributes {
		names = append(names, n)
	}
	checkTemplateArguments(t, "../templates/list-resources/conversation.md.tmpl", names)
}

// checkTemplateArguments compares the "- `name` (Type)" lines under
// "## Schema" with the schema's attribute names.
func checkTemplateArguments(t *testing.T, file string, names []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, schemaPart, ok := strings.Cut(string(b), "## Schema")
	if !ok {
		t.Fatalf("%s has no ## Schema section", file)
	}
	var documented []string
	for _, line := range strings.Split(schemaPart, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			if name, _, ok := strings.Cut(rest, "`"); ok {
				documented = append(documented, name)
			}
		}
	}
	sort.Strings(names)
	sort.Strings(documented)
	if strings.Join(names, ",") != strings.Join(documented, ",") {
		t.Errorf("%s documents %v; the schema has %v", file, documented, names)
	}
}

func TestDocsTemplate_annotationList(t *testing.T) {
	var resp list.ListResourceSchemaResponse
	NewAnnotationListResource().ListResourceConfigSchema(context.Background(), list.ListResourceSchemaRequest{}, &resp)
	names := make([]string, 0, len(resp.Schema.Attributes))
	for n := range resp.Schema.Attributes {
		names = append(names, n)
	}
	checkTemplateArguments(t, "../templates/list-resources/annotation.md.tmpl", names)
}
