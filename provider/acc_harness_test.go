package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// Acceptance tests run the real Terraform CLI (TF_ACC=1, TF_ACC_TERRAFORM_PATH)
// against the provider served in-process and an in-process dify-mock on
// 127.0.0.1 with speed 0. Expected values come from the built-in cassette set,
// never from literals, so a changed cassette cannot make a test pass vacuously.

const testAPIKey = "app-acceptance-test-key"

// mockEnv is one dify-mock behind a request counter and a fault injector.
type mockEnv struct {
	t       *testing.T
	BaseURL string
	Set     *cassette.Set
	counts  *requestCounter
	srv     *mockserver.Server
	// configures counts provider Configure calls: one per Terraform graph walk.
	configures atomic.Int64
}

func newMockEnv(t *testing.T, cfg mockserver.Config) *mockEnv {
	t.Helper()
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		t.Fatalf("loading cassettes: %v", err)
	}
	srv, err := mockserver.New(cfg)
	if err != nil {
		t.Fatalf("mockserver.New: %v", err)
	}
	env := &mockEnv{t: t, Set: set, counts: newRequestCounter(), srv: srv}
	ts := httptest.NewServer(env.counts.wrap(srv))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	env.BaseURL = ts.URL + "/v1"
	return env
}

// factories serves this package's provider to the Terraform CLI, counting
// Configure calls so tests can relate request counts to graph walks.
func (e *mockEnv) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"dify": providerserver.NewProtocol6WithError(&countingProvider{difyProvider: &difyProvider{version: "test"}, n: &e.configures}),
	}
}

type countingProvider struct {
	*difyProvider
	n *atomic.Int64
}

func (p *countingProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	p.n.Add(1)
	p.difyProvider.Configure(ctx, req, resp)
}

// providerBlock renders a provider block pointing at the mock; extra lines
// are added inside it.
func (e *mockEnv) providerBlock(extra ...string) string {
	return fmt.Sprintf(`
provider "dify" {
  base_url        = %q
  api_key         = %q
  user            = "acc-user"
  retry_max_delay = "50ms"
  %s
}
`, e.BaseURL, testAPIKey, strings.Join(extra, "\n  "))
}

// client is a dify client for checks made outside Terraform.
func (e *mockEnv) client() *dify.Client {
	c, err := dify.NewClient(e.BaseURL, testAPIKey, dify.WithUser("acc-user"))
	if err != nil {
		e.t.Fatalf("dify client: %v", err)
	}
	return c
}

// cassetteTurn returns the first recorded turn of a built-in cassette and
// the Turn a client folds from its stream.
func (e *mockEnv) cassetteTurn(name string) (*cassette.RecordedTurn, *dify.ChatReply) {
	e.t.Helper()
	c, ok := e.Set.Get(name)
	if !ok {
		e.t.Fatalf("no built-in cassette %q (have %v)", name, e.Set.Names)
	}
	t := c.Turns[0]
	var raw bytes.Buffer
	for _, f := range t.Frames {
		raw.Write(f.Raw)
	}
	folded, err := dify.Collect(dify.NewChatStream(&raw))
	if err != nil {
		if _, stream := dify.AsAPIError(err); !stream {
			e.t.Fatalf("folding cassette %q: %v", name, err)
		}
	}
	return t, folded
}

// appResponse decodes one of the app description's recorded bodies.
func (e *mockEnv) appResponse(path string, out any) {
	e.t.Helper()
	r, ok := e.Set.App.Responses[path]
	if !ok {
		e.t.Fatalf("app description lacks %s", path)
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		e.t.Fatalf("decoding %s: %v", path, err)
	}
}

// requestCounter counts requests by "METHOD /path" (path relative to /v1).
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func newRequestCounter() *requestCounter { return &requestCounter{n: map[string]int{}} }

func (c *requestCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n[r.Method+" "+strings.TrimPrefix(r.URL.Path, "/v1")]++
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (c *requestCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// matching sums the counts of keys with the given prefix.
func (c *requestCounter) matching(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for k, v := range c.n {
		if strings.HasPrefix(k, prefix) {
			total += v
		}
	}
	return total
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	c.n = map[string]int{}
	c.mu.Unlock()
}

// fault makes the mock answer the next times requests to route ("GET
// /v1/info") with the fault spec (docs/mock/faults.md), through a mock rule
// (docs/mock/console.md), and returns the rule for faultUsed.
func (e *mockEnv) fault(route, spec string, times int) rules.Rule {
	e.t.Helper()
	r, err := e.srv.Rules().Add(rules.Rule{Route: route, Fault: spec, Times: times})
	if err != nil {
		e.t.Fatalf("fault rule %s %s: %v", route, spec, err)
	}
	return r
}

// faultUsed is how many requests the fault rule has answered. The mock
// removes a rule once its times are spent.
func (e *mockEnv) faultUsed(rule rules.Rule) int {
	for _, r := range e.srv.Rules().List() {
		if r.ID == rule.ID {
			return r.Used
		}
	}
	return rule.Times
}

// stateAttr reads one attribute of a resource from the state, for checks
// that need a value later (PreConfig of the next step).
func stateAttr(name, attr string, into *string) func(*terraform.State) error {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[name]
		if !ok {
			return fmt.Errorf("%s not in state", name)
		}
		v, ok := rs.Primary.Attributes[attr]
		if !ok {
			return fmt.Errorf("%s has no %s", name, attr)
		}
		*into = v
		return nil
	}
}

var compareSame = compare.ValuesSame()

// hclString quotes s for HCL (JSON string syntax is valid HCL, except that
// "${" and "%{" start templates and must be escaped).
func hclString(s string) string {
	b, _ := json.Marshal(s)
	q := strings.ReplaceAll(string(b), "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}

// errRE matches the parts in order, anywhere in Terraform's output. Spaces in
// a part match any whitespace, because Terraform wraps diagnostic text.
func errRE(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(p), " ", `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, ".*"))
}
