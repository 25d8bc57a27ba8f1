package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

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
					expectNotInState{fileAddr, string(v1)},
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
					expectNotInState{fileAddr, string(v2)},
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
				ExpectError: errRE("Invalid Attribute Combination", "Exactly one of these attributes must be configured", "[source,content,content_base64,content_wo]")},
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

// expectNotInState fails when any attribute value of the resource addr holds
// the uploaded text: only paths, hashes and Dify's answer may be in state.
type expectNotInState struct{ addr, content string }

func (e expectNotInState) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if req.State == nil || req.State.Values == nil || req.State.Values.RootModule == nil {
		resp.Error = fmt.Errorf("no state")
		return
	}
	for _, r := range req.State.Values.RootModule.Resources {
		if r.Address != e.addr {
			continue
		}
		b, err := json.Marshal(r.AttributeValues)
		if err != nil {
			resp.Error = err
			return
		}
		enc, _ := json.Marshal(e.content)
		if strings.Contains(string(b), strings.Trim(string(enc), `"`)) {
			resp.Error = fmt.Errorf("%s keeps the uploaded bytes in state: %s", e.addr, b)
		}
		return
	}
	resp.Error = fmt.Errorf("%s not in state", e.addr)
}

// TestAccFileResource_writeOnly uploads content_wo (Terraform >= 1.11): the
// bytes reach Dify but never the state; a changed content_wo alone plans
// nothing, and a new content_wo_version uploads the new content.
func TestAccFileResource_writeOnly(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	v1, v2 := "# Runbook\nrestart the worker\n", "# Runbook\nrestart the worker, then the beat\n"
	config := func(content string, version int) string {
		return fileConfig(env, fmt.Sprintf("filename = \"runbook.md\"\ncontent_wo = %s\ncontent_wo_version = %d", hclString(content), version))
	}
	uploads := func(want int) func(*terraform.State) error {
		return func(*terraform.State) error {
			if got := env.counts.get("POST /files/upload"); got != want {
				return fmt.Errorf("POST /files/upload = %d, want %d", got, want)
			}
			return nil
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		Steps: []resource.TestStep{
			{
				Config: config(v1, 1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("content_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("content"), knownvalue.Null()),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("content_wo_version"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("size"), knownvalue.Int64Exact(int64(len(v1)))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex([]byte(v1)))),
					expectNotInState{fileAddr, v1},
				},
				Check: uploads(1),
			},
			{
				// Terraform keeps no copy to compare: nothing to do.
				Config: config(v2, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionNoop),
				}},
				Check: uploads(1),
			},
			{
				Config: config(v2, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(fileAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("size"), knownvalue.Int64Exact(int64(len(v2)))),
					statecheck.ExpectKnownValue(fileAddr, tfjsonpath.New("sha256"), knownvalue.StringExact(sha256Hex([]byte(v2)))),
					expectNotInState{fileAddr, v2},
				},
				Check: uploads(2),
			},
		},
	})
}
