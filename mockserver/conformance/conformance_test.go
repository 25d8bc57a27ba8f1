package conformance_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/conformance"
)

const testKey = "app-conformance-test-key"

// featuresOff is the built-in app with suggested questions, speech to text
// and text to speech switched off, for the feature-gated cases.
func featuresOff(t *testing.T) *cassette.Set {
	t.Helper()
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	app := *set.App
	app.Responses = map[string]*cassette.Response{}
	for k, v := range set.App.Responses {
		app.Responses[k] = v
	}
	var params map[string]any
	if err := json.Unmarshal([]byte(set.App.Responses["/parameters"].Body), &params); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"suggested_questions_after_answer", "speech_to_text", "text_to_speech"} {
		params[f] = map[string]any{"enabled": false}
	}
	body, _ := json.Marshal(params)
	resp := *set.App.Responses["/parameters"]
	resp.Body = body
	app.Responses["/parameters"] = &resp
	if err := json.Unmarshal(body, &app.Parameters); err != nil {
		t.Fatal(err)
	}
	cp := *set
	cp.App = &app
	return &cp
}

// TestMockConformsToDify runs the whole table against an in-process
// dify-mock, once with the built-in app and once with its features off,
// and asserts every case's expectation. Each subtest is a case: its name
// and Source say which Dify code the mock failed to follow.
func TestMockConformsToDify(t *testing.T) {
	for _, variant := range []struct {
		name string
		set  func(*testing.T) *cassette.Set
	}{
		{"builtin", func(*testing.T) *cassette.Set { return nil }},
		{"features-off", featuresOff},
	} {
		t.Run(variant.name, func(t *testing.T) {
			srv, err := mockserver.New(mockserver.Config{Cassettes: variant.set(t), APIKeys: []string{testKey}})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			r := &conformance.Runner{Target: conformance.Target{BaseURL: ts.URL + "/v1", Key: testKey}, MaxChatTurns: -1}
			cases := conformance.Cases()
			obs, err := r.Run(context.Background(), cases)
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for i, c := range cases {
				o := obs[i]
				t.Run(c.Name, func(t *testing.T) {
					if o.Skipped != "" {
						t.Skip(o.Skipped)
					}
					for _, m := range conformance.Check(c, o) {
						t.Errorf("%s\n  source: %s\n  body: %s", m, c.Source, o.Body)
					}
				})
				if o.Skipped == "" {
					ran++
				}
			}
			if ran < len(cases)/2 {
				t.Errorf("only %d of %d cases ran", ran, len(cases))
			}
			if errs := r.Cleanup(); len(errs) > 0 {
				t.Errorf("cleanup: %v", errs)
			}
		})
	}
}

// TestTableIsWellFormed keeps the table usable by every consumer.
func TestTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	classes := map[string]bool{}
	for _, c := range conformance.Cases() {
		if c.Name == "" || seen[c.Name] {
			t.Errorf("case name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
		if !strings.HasPrefix(c.Source, "api/") && !strings.Contains(c.Source, "api/") && !strings.Contains(c.Source, "werkzeug") && !strings.Contains(c.Source, "pydantic") && !strings.Contains(c.Source, "flask") {
			t.Errorf("%s: Source %q names no Dify file", c.Name, c.Source)
		}
		if c.Route == "" || c.Request.Method == "" || c.Expect.Status == 0 {
			t.Errorf("%s: route, method and expected status are required", c.Name)
		}
		classes[c.Class] = true
	}
	for _, want := range []string{conformance.ClassValid, conformance.ClassMissing, conformance.ClassExtra, conformance.ClassWrongType,
		conformance.ClassContentType, conformance.ClassUUID, conformance.ClassBounds, conformance.ClassEmpty, conformance.ClassMethod, conformance.ClassRouting} {
		if !classes[want] {
			t.Errorf("no case of class %q", want)
		}
	}
}
