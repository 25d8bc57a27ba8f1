package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// TestAccProvider_retriesReads makes the mock fail reads with 429 (with a
// Retry-After far above retry_max_delay) and 503: the reads succeed after
// retries, and with retries disabled the same fault fails with a precise
// diagnostic.
func TestAccProvider_retriesReads(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	info := env.fault("GET /v1/info", "status:429;retry-after=30", 2)
	site := env.fault("GET /v1/site", "status:503", 2)
	var listing rules.Rule
	config := env.providerBlock() + `
data "dify_app_info" "this" {}
data "dify_app_site" "this" {}
resource "dify_conversation" "test" {
  query = "Hello"
}
`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					if got := env.faultUsed(info); got != 2 {
						return fmt.Errorf("429 fault served %d times, want 2", got)
					}
					if got := env.faultUsed(site); got != 2 {
						return fmt.Errorf("503 fault served %d times, want 2", got)
					}
					// Each fault was followed by a retry that reached the mock.
					if got := env.counts.get("GET /info"); got < 3 {
						return fmt.Errorf("GET /info reached the server %d times, want at least 3", got)
					}
					return nil
				},
			},
			{
				// A 503 while refreshing the conversation is retried too.
				PreConfig: func() {
					listing = env.fault("GET /v1/conversations", "status:503", 1)
				},
				Config:   config,
				PlanOnly: true,
			},
			{
				PreConfig: func() {
					if got := env.faultUsed(listing); got != 1 {
						t.Errorf("the listing fault was served %d times, want 1", got)
					}
					env.fault("GET /v1/info", "status:429", 1)
				},
				Config: strings.Replace(config, `retry_max_delay = "50ms"`, `retry_max_delay = "50ms"
  retry_max_attempts = 1`, 1),
				ExpectError: errRE("Unable to read app info", `HTTP 429 with code "too_many_requests"`, "retry_max_attempts"),
			},
		},
	})
}

// TestAccConversationResource_refreshRequestCount refreshes N conversations
// and counts requests per Terraform graph walk (provider Configure): one
// listing page per walk and no per-resource probes while all exist, and one
// probe per deleted conversation.
func TestAccConversationResource_refreshRequestCount(t *testing.T) {
	const n = 12
	env := newMockEnv(t, mockserver.Config{})
	config := env.providerBlock() + fmt.Sprintf(`
resource "dify_conversation" "test" {
  count = %d
  query = "Hello number ${count.index}"
}
`, n)
	var first, second string
	var walksBefore int64
	begin := func() {
		env.counts.reset()
		walksBefore = env.configures.Load()
	}
	measure := func(label string) (walks, listings, probes int) {
		walks = int(env.configures.Load() - walksBefore)
		listings, probes = env.counts.get("GET /conversations"), env.counts.get("GET /messages")
		t.Logf("%s: %d conversations, %d graph walks, %d GET /conversations, %d GET /messages, %d requests in all",
			label, n, walks, listings, probes, env.counts.matching(""))
		if walks == 0 {
			t.Errorf("%s: no provider Configure was counted", label)
		}
		return walks, listings, probes
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		CheckDestroy:             expectRemaining(env, 0),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(
					stateAttr("dify_conversation.test.0", "id", &first),
					stateAttr("dify_conversation.test.1", "id", &second),
				),
			},
			{PreConfig: begin, Config: config, PlanOnly: true},
			{
				PreConfig: func() {
					walks, listings, probes := measure("refresh, all present")
					if listings < 1 || listings > walks {
						t.Errorf("GET /conversations = %d for %d walks; want one page per walk (a scan per resource would be %d)", listings, walks, n*walks)
					}
					if probes != 0 {
						t.Errorf("GET /messages = %d; no probe is needed while every conversation is listed", probes)
					}
					for _, id := range []string{first, second} {
						if err := env.client().DeleteConversation(t.Context(), id, "acc-user"); err != nil {
							t.Fatalf("deleting %s: %v", id, err)
						}
					}
					begin()
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() {
					walks, listings, probes := measure("refresh, 2 deleted")
					if listings < 1 || listings > walks {
						t.Errorf("GET /conversations = %d for %d walks, want at most one per walk", listings, walks)
					}
					if probes < 2 || probes > 2*walks {
						t.Errorf("GET /messages = %d for %d walks, want one probe per deleted conversation per walk", probes, walks)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("dify_conversation.test[0]", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction("dify_conversation.test[1]", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction("dify_conversation.test[2]", plancheck.ResourceActionNoop),
				}},
				Check: expectRemaining(env, n),
			},
		},
	})
}

// TestAccProvider_apiKeyNeverLogged runs with Terraform's trace log (provider
// and CLI) captured to a file, through a retried read and a rejected key,
// and checks the key never appears while the provider's own log lines do.
// The key comes from DIFY_API_KEY because the test harness itself logs the
// configuration text it writes.
func TestAccProvider_apiKeyNeverLogged(t *testing.T) {
	const secret = "app-VerySecretTestKey0123456789"
	logFile := filepath.Join(t.TempDir(), "acc.log")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	t.Setenv(EnvAPIKey, secret)
	env := newMockEnv(t, mockserver.Config{APIKeys: []string{secret}})
	env.fault("GET /v1/info", "status:429;retry-after=1", 1)
	config := fmt.Sprintf("provider \"dify\" {\n  base_url = %q\n  retry_max_delay = \"50ms\"\n}\ndata \"dify_app_info\" \"this\" {}\n", env.BaseURL)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:   func() { os.Setenv(EnvAPIKey, secret+"-wrong") },
				Config:      config,
				ExpectError: errRE("Unable to read app info", `HTTP 401 with code "unauthorized"`, "api_key or DIFY_API_KEY"),
			},
		},
	})
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("reading the trace log: %v", err)
	}
	log := string(raw)
	if !strings.Contains(log, "dify: retrying request") {
		t.Fatalf("the provider's retry log line is missing from %s (%d bytes): the check below would prove nothing", logFile, len(raw))
	}
	if !strings.Contains(log, "Access token is invalid") {
		t.Fatalf("the 401 diagnostic is missing from the trace log; the check below would not cover diagnostics")
	}
	if strings.Contains(log, secret) {
		i := strings.Index(log, secret)
		t.Fatalf("the API key appears in the trace log near: %q", log[max(0, i-200):i])
	}
}

// TestAccProvider_missingAPIKey checks the attribute diagnostic naming both
// sources of the key.
func TestAccProvider_missingAPIKey(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	env := newMockEnv(t, mockserver.Config{})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: env.factories(),
		Steps: []resource.TestStep{{
			Config:      fmt.Sprintf("provider \"dify\" {\n  base_url = %q\n}\ndata \"dify_app_info\" \"this\" {}\n", env.BaseURL),
			ExpectError: errRE("Missing Dify API key", "api_key attribute", EnvAPIKey),
		}},
	})
	if got := env.counts.matching(""); got != 0 {
		t.Errorf("%d requests reached the server without a key", got)
	}
}

// TestAccProvider_baseURLSecretsNotPrintedByTerraform checks what Terraform
// itself prints, not only the provider's diagnostic: an attribute
// diagnostic makes Terraform quote the configuration line, so a base_url
// with a password or an ?api_key= used to reach the terminal and CI logs.
func TestAccProvider_baseURLSecretsNotPrintedByTerraform(t *testing.T) {
	env := newMockEnv(t, mockserver.Config{})
	host := strings.TrimPrefix(env.BaseURL, "http://")
	for _, raw := range []string{
		"http://alice:hunter2-pass@" + host,
		env.BaseURL + "?api_key=app-hunter2-pass",
		"ftp://alice:hunter2-pass@" + host,
	} {
		t.Run("", func(t *testing.T) {
			seen := false
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: env.factories(),
				// Called with Terraform's whole output (ExpectError would
				// only match a pattern in it).
				ErrorCheck: func(err error) error {
					seen = true
					out := err.Error()
					if i := strings.Index(out, "hunter2"); i >= 0 {
						t.Errorf("Terraform printed the secret: …%s…", out[max(0, i-160):min(len(out), i+40)])
					}
					if !strings.Contains(out, "Invalid Dify base URL") {
						return err
					}
					return nil
				},
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf("provider \"dify\" {\n  base_url = %q\n  api_key  = %q\n}\ndata \"dify_app_info\" \"this\" {}\n", raw, testAPIKey),
				}},
			})
			if !seen {
				t.Fatal("the error check did not run: the test would not see what Terraform prints")
			}
		})
	}
}
