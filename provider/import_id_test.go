package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// An empty or blank import id (an unset "$ID" in a script) gets one clear
// error on every importable resource, through the same protocol call
// Terraform makes. Before, the resources with an identity answered the
// framework's "Value Conversion Error".
func TestImportEmptyID(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	for typeName, f := range importForms {
		for _, id := range []string{"", "  "} {
			t.Run(typeName+"/"+strings.ReplaceAll(id, " ", "blank"), func(t *testing.T) {
				resp, err := server.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: typeName, ID: id})
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Diagnostics) != 1 {
					t.Fatalf("diagnostics = %+v, want one", resp.Diagnostics)
				}
				d := resp.Diagnostics[0]
				if d.Severity != tfprotov6.DiagnosticSeverityError || d.Summary != "Empty import id" {
					t.Errorf("diagnostic %q (%v)", d.Summary, d.Severity)
				}
				for _, want := range []string{"The import id for " + typeName + " is empty", "terraform import " + typeName + ".NAME " + f.form,
					f.example, "shell variable that is not set", `"$ID"`} {
					if !strings.Contains(d.Detail, want) {
						t.Errorf("detail lacks %q:\n%s", want, d.Detail)
					}
				}
				if len(resp.ImportedResources) != 0 {
					t.Errorf("imported %d resources from an empty id", len(resp.ImportedResources))
				}
			})
		}
	}
}

// Every importable resource has a form, and the form and example are the
// ones its import.sh (the docs' Import section) shows.
func TestImportFormsMatchExamples(t *testing.T) {
	p := New("test")()
	for _, newResource := range p.Resources(context.Background()) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(context.Background(), resource.MetadataRequest{ProviderTypeName: "dify"}, &meta)
		name := meta.TypeName
		if _, importable := r.(resource.ResourceWithImportState); !importable || name == "dify_file" {
			continue // dify_file refuses every import, with the reason
		}
		f, ok := importForms[name]
		if !ok {
			t.Errorf("%s has no import form", name)
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "examples", "resources", name, "import.sh"))
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range append(strings.Split(f.form, " or "), f.example[strings.LastIndex(f.example, "/")+1:]) {
			if !strings.Contains(string(b), part) {
				t.Errorf("%s: import.sh does not show %q", name, part)
			}
		}
	}
}
