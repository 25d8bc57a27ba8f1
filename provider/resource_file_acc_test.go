package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

const fileAddr = "dify_file.test"

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileConfig(env *mockEnv, body string) string {
	return env.providerBlock() + "\nresource \"dify_file\" \"test\" {\n" + body + "\n}\n"
}

func TestAccFileResource_content(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	v1, v2 := "# Notes\nfirst version\n", "# Notes\nsecond version\n"
	newID := statecheck.CompareValue(compare.ValuesDiffer())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: fileConfig(env, "filename = \"notes.md\"\ncontent = "+hclString(v1)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex([]byte(v1)))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					newID.AddStateValue(fileAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f-]{36}$`))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("name"), knownvalue.StringExact("notes.md")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("size"), knownvalue.Int64Exact(int64(len(v1)))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("extension"), knownvalue.StringExact("md")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex([]byte(v1)))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("user"), knownvalue.StringExact("acc-user")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("created_by"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("created_at"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("source_url"), knownvalue.NotNull()),
				},
			},
			{
				Config: fileConfig(env, "filename = \"notes.md\"\ncontent = "+hclString(v2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					newID.AddStateValue(fileAddr, tfjsonpath.New("id")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex([]byte(v2)))),
				},
				Check: func(*terraform.State) error {
					if got := env.counts.get("POST /files/upload"); got != 2 {
						return fmt.Errorf("POST /files/upload = %d, want 2 (one per version)", got)
					}
					return nil
				},
			},
			{
				// Nothing about an upload can be read back by id.
				ResourceName:  fileAddr,
				ImportState:   true,
				ImportStateId: "00000000-0000-4000-8000-000000000000",
				ExpectError:   errRE("dify_file cannot be imported", "cannot read an uploaded file back", "Upload the file again"),
			},
		},
	})
}

// TestAccFileResource_source uploads a local file and replaces the upload
// when the file changes on disk (the plan-time sha256).
func TestAccFileResource_source(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	dir := t.TempDir()
	src := filepath.Join(dir, "itinerary.md")
	v1, v2 := []byte("Day 1: Lisbon\n"), []byte("Day 1: Porto\n")
	if err := os.WriteFile(src, v1, 0o600); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n fake image bytes")
	config := fileConfig(env, "source = "+hclString(src)) + `
resource "dify_file" "image" {
  filename       = "photo.png"
  content_base64 = "` + base64.StdEncoding.EncodeToString(png) + `"
  user           = "photo-owner"
}
`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("filename"), knownvalue.StringExact("itinerary.md")),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("size"), knownvalue.Int64Exact(int64(len(v1)))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex(v1))),
					statecheck.ExpectKnownValue("dify_file.image", tfjsonpath.New("extension"), knownvalue.StringExact("png")),
					statecheck.ExpectKnownValue("dify_file.image", tfjsonpath.New("mime_type"), knownvalue.StringExact("image/png")),
					statecheck.ExpectKnownValue("dify_file.image", tfjsonpath.New("size"), knownvalue.Int64Exact(int64(len(png)))),
					statecheck.ExpectKnownValue("dify_file.image", tfjsonpath.New("user"), knownvalue.StringExact("photo-owner")),
				},
			},
			{
				PreConfig: func() {
					if err := os.WriteFile(src, v2, 0o600); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectResourceAction("dify_file.image", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex(v2))),
				},
			},
		},
	})
}

// TestAccFileResource_validation checks the plan-time errors; none of them
// may upload anything.
func TestAccFileResource_validation(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	dir := t.TempDir()
	big := filepath.Join(dir, "huge.png")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file one byte over the 10 MB image limit (docs/api §9.1).
	if err := f.Truncate(10<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(small, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy: func(*terraform.State) error {
			if got := env.counts.get("POST /files/upload"); got != 0 {
				return fmt.Errorf("invalid configurations uploaded %d files", got)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: fileConfig(env, "source = "+hclString(small)+"\ncontent = \"x\"\nfilename = \"a.txt\""), PlanOnly: true,
				ExpectError: errRE("Invalid Attribute Combination", "Exactly one of these attributes must be configured", "[source,content,content_base64]")},
			{Config: fileConfig(env, `filename = "a.txt"`), PlanOnly: true,
				ExpectError: errRE("Missing Attribute Configuration", "Exactly one of these attributes must be configured")},
			{Config: fileConfig(env, `content = "x"`), PlanOnly: true,
				ExpectError: errRE("Missing filename", "needs filename")},
			{Config: fileConfig(env, "source = "+hclString(filepath.Join(dir, "missing.md"))), PlanOnly: true,
				ExpectError: errRE("Invalid dify_file content", "cannot read source", "missing.md")},
			{Config: fileConfig(env, "source = "+hclString(big)), PlanOnly: true,
				ExpectError: errRE("File too large for Dify", "huge.png", "over Dify's image limit of 10 MB")},
			{Config: fileConfig(env, "content_base64 = \"!!!\"\nfilename = \"a.bin\""), PlanOnly: true,
				ExpectError: errRE("Invalid base64 content")},
			{Config: fileConfig(env, "content = \"x\"\nfilename = \"dir/a.txt\""), PlanOnly: true,
				ExpectError: errRE("must be a file name without")},
		},
	})
}
