package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
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

// TestRunIsSafeAndCleansUp: the run creates its conversations under one
// dedicated user, leaves none behind, never writes the key into what it
// reports, and stops sending chat turns at the cap.
func TestRunIsSafeAndCleansUp(t *testing.T) {
	srv, err := mockserver.New(mockserver.Config{APIKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	r := &conformance.Runner{Target: conformance.Target{BaseURL: ts.URL + "/v1/", Key: testKey}, User: "conformance-cleanup", MaxChatTurns: 1}
	// The table's only chat turn is the fixture's; a chat case on top of
	// it must hit the cap of 1.
	cases := append(conformance.Cases(), conformance.Case{Name: "extra-turn", Route: "POST /chat-messages", Class: conformance.ClassValid,
		Request: conformance.Request{Method: "POST", Path: "/chat-messages", Header: map[string]string{"Content-Type": "application/json"},
			Body: `{"query":"hi","inputs":{},"user":"{user}","response_mode":"streaming"}`}, ChatTurn: true})
	obs, err := r.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	capped := 0
	for _, o := range obs {
		data, _ := json.Marshal(o)
		if strings.Contains(string(data), testKey) {
			t.Errorf("%s: the key is in the observation: %s", o.Case, data)
		}
		if o.Skipped == "chat-turn cap reached" {
			capped++
		}
	}
	if capped == 0 || conformance.ChatTurns(cases) < 2 {
		t.Errorf("cap of 1 chat turn skipped %d cases (table has %d)", capped, conformance.ChatTurns(cases))
	}
	c := &http.Client{}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/conversations?user=conformance-cleanup", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Data []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page.Data) != 0 {
		t.Errorf("conversations left behind: %v %d", err, len(page.Data))
	}
	// The annotation fixture was made (cases need it) and is gone again.
	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/v1/apps/annotations?keyword="+url.QueryEscape(conformance.FixtureAnnotationQuestion), nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var annotations struct {
		Data  []json.RawMessage
		Total int
	}
	if err := json.NewDecoder(resp.Body).Decode(&annotations); err != nil || len(annotations.Data) != 0 || annotations.Total != 0 {
		t.Errorf("annotations left behind: %v %d", err, len(annotations.Data))
	}
	made := false
	for i, c := range cases {
		if slices.Contains(c.Needs, conformance.FixtureAnnotation) && obs[i].Skipped == "" && obs[i].Status == http.StatusOK {
			made = true
		}
	}
	if !made {
		t.Error("no case used the annotation fixture")
	}
}

// TestServerVersionMatchesSource: GET /v1/ reports the Dify release whose
// source the table encodes.
func TestServerVersionMatchesSource(t *testing.T) {
	srv, err := mockserver.New(mockserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/v1/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var root struct {
		ServerVersion string `json:"server_version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil || root.ServerVersion != conformance.SourceVersion {
		t.Errorf("server_version %q (%v), want %q", root.ServerVersion, err, conformance.SourceVersion)
	}
}

func TestShapeCheckAndDiff(t *testing.T) {
	s := conformance.ShapeOf([]byte(`{"a":1,"b":null,"c":[{"x":"s"},{"x":null}],"d":[]}`))
	want := map[string]string{"$": "object", "$.a": "number", "$.b": "null", "$.c": "array", "$.c[]": "object", "$.c[].x": "null|string", "$.d": "array"}
	if len(s) != len(want) {
		t.Errorf("shape %v", s)
	}
	for k, v := range want {
		if s[k] != v {
			t.Errorf("shape[%s] = %q, want %q", k, s[k], v)
		}
	}
	if conformance.ShapeOf([]byte("<html>")) != nil {
		t.Error("HTML has a shape")
	}
	c := conformance.Case{Name: "x", Expect: conformance.Expect{Status: 400, Code: "invalid_param", Message: "m https://errors.pydantic.dev/2.12/v/x", Fields: map[string]string{"$.a": "number"}, Absent: []string{"$.b"}}}
	o := conformance.Observed{Status: 400, Envelope: &conformance.Envelope{Code: "invalid_param", Message: "m https://errors.pydantic.dev/<version>/v/x", Status: 400}, Shape: conformance.Shape{"$.a": "number"}}
	if m := conformance.Check(c, o); len(m) != 0 {
		t.Errorf("conforming observation: %v", m)
	}
	o.Shape["$.b"] = "null"
	o.Status = 422
	if m := conformance.Check(c, o); len(m) != 3 {
		t.Errorf("want status, envelope-status and absent-field mismatches, got %v", m)
	}
	a := conformance.Observed{Case: "x", Status: 200, Shape: conformance.Shape{"$.id": "string", "$.n": "null"}}
	b := conformance.Observed{Case: "x", Status: 200, Shape: conformance.Shape{"$.id": "string", "$.m": "null"}}
	d := conformance.Diff(a, b)
	if len(d) != 2 || d[0].Path != "$.m" || d[0].A != "(missing)" || d[1].Path != "$.n" || d[1].B != "(missing)" {
		t.Errorf("diff %+v", d)
	}
	if len(conformance.Diff(a, a)) != 0 {
		t.Error("an observation differs from itself")
	}
}

// TestAgentChatOnlyCases runs the cases restricted to legacy agent-chat
// apps (conversation variables) against the mock in that mode, where the
// two variants above skip them: none may be skipped, all must hold.
func TestAgentChatOnlyCases(t *testing.T) {
	var cases []conformance.Case
	for _, c := range conformance.Cases() {
		if slices.Contains(c.Requires.Modes, "agent-chat") && !slices.Contains(c.Requires.Modes, "agent") {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no agent-chat-only case in the table")
	}
	srv, err := mockserver.New(mockserver.Config{Mode: "agent-chat", APIKeys: []string{testKey}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	r := &conformance.Runner{Target: conformance.Target{BaseURL: ts.URL + "/v1", Key: testKey}, MaxChatTurns: -1}
	obs, err := r.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode() != "agent-chat" {
		t.Fatalf("mode %q", r.Mode())
	}
	for i, c := range cases {
		o := obs[i]
		t.Run(c.Name, func(t *testing.T) {
			if o.Skipped != "" {
				t.Fatalf("skipped: %s", o.Skipped)
			}
			for _, m := range conformance.Check(c, o) {
				t.Errorf("%s\n  source: %s\n  body: %s", m, c.Source, o.Body)
			}
		})
	}
}

// TestDiffShapesIgnoresAppData: an empty array matches any element shape,
// and what lies under a path one side lacks is that path's row alone.
func TestDiffShapesIgnoresAppData(t *testing.T) {
	shape := func(doc string) conformance.Shape {
		s := conformance.ShapeOf([]byte(doc))
		if s == nil {
			t.Fatalf("not JSON: %s", doc)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		a, b string
		want []conformance.ShapeDifference
	}{
		{"other users' rows against an empty list", `{"data":[{"id":"x","rating":"like","content":null}],"has_more":false}`, `{"data":[],"has_more":false}`, nil},
		{"the empty side may be either", `{"data":[]}`, `{"data":[{"id":"x"}]}`, nil},
		{"elements compared when both sides have some", `{"data":[{"id":"x","rating":"like"}]}`, `{"data":[{"id":"y"}]}`,
			[]conformance.ShapeDifference{{Path: "$.data[].rating", A: "string", B: "(missing)"}}},
		{"a missing object is one row", `{"metadata":{"usage":{"prompt_tokens":1,"total_price":"0.1","currency":"USD"}}}`, `{"metadata":{}}`,
			[]conformance.ShapeDifference{{Path: "$.metadata.usage", A: "object", B: "(missing)"}}},
		{"a nested empty list under present elements", `{"data":[{"files":[]}]}`, `{"data":[{"files":[{"id":"f"}]}]}`, nil},
		{"an array against null is a difference", `{"data":null}`, `{"data":[{"id":"x"}]}`,
			[]conformance.ShapeDifference{{Path: "$.data", A: "null", B: "array"}}},
	} {
		got := conformance.DiffShapes(shape(tc.a), shape(tc.b))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Expect.Values compares every value at a path with one JSON value, and a
// value that differs between two observations is a Difference.
func TestValuesAreChecked(t *testing.T) {
	body := []byte(`{"data":[{"parent_message_id":"00000000-0000-0000-0000-000000000000","n":1},{"parent_message_id":null,"n":1}]}`)
	want := map[string]string{"$.data[].parent_message_id": `"00000000-0000-0000-0000-000000000000"`, "$.data[].n": `1`, "$.gone": `0`}
	got := conformance.ValuesAt(body, want)
	if got["$.data[].parent_message_id"] != `"00000000-0000-0000-0000-000000000000"|null` || got["$.data[].n"] != "1" {
		t.Fatalf("ValuesAt = %v", got)
	}
	if _, ok := got["$.gone"]; ok {
		t.Fatal("a path with no value was reported")
	}
	c := conformance.Case{Name: "x", Expect: conformance.Expect{Values: want}}
	msgs := conformance.Check(c, conformance.Observed{Values: got})
	if len(msgs) != 2 || !strings.Contains(msgs[0], "$.data[].parent_message_id") || !strings.Contains(msgs[1], "$.gone") {
		t.Fatalf("Check = %q", msgs)
	}
	d := conformance.Diff(conformance.Observed{Values: got}, conformance.Observed{Values: map[string]string{"$.data[].n": "2"}})
	if len(d) != 1 || d[0].Aspect != "value" || d[0].Path != "$.data[].n" {
		t.Fatalf("Diff = %+v", d)
	}
}
