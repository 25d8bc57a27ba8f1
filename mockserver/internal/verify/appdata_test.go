package verify_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/verify"
)

// seedOtherUsers gives the fake upstream what a production app holds:
// another end user's conversation with a rated message, and an annotation.
// It goes straight to the server (not through what verify sends).
func seedOtherUsers(t *testing.T, up *fakeUpstream, customer string) {
	t.Helper()
	post := func(path, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, up.base()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+upstreamKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode/100 != 2 {
			t.Fatalf("seed POST %s: %s", path, resp.Status)
		}
		return resp
	}
	resp := post("/chat-messages", `{"query":"where is my order?","inputs":{},"user":"`+customer+`","response_mode":"streaming"}`)
	msgID := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			MessageID string `json:"message_id"`
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.MessageID != "" {
			msgID = ev.MessageID
		}
	}
	resp.Body.Close()
	if msgID == "" {
		t.Fatal("seed: no message id in the stream")
	}
	post("/messages/"+msgID+"/feedbacks", `{"rating":"dislike","user":"`+customer+`","content":"too slow"}`).Body.Close()
	post("/apps/annotations", `{"question":"opening hours?","answer":"9 to 5"}`).Body.Close()
}

// TestAppDataIsNotADifference: an upstream app with other users' feedback
// and an annotation (every production app) and no deviation at all gives
// no difference: an empty array on the mock's side matches any element
// shape. And nothing verify sends names an end user other than its own
// (the stop case's number user included).
func TestAppDataIsNotADifference(t *testing.T) {
	up := newFakeUpstream(t)
	const customer = "7"
	seedOtherUsers(t, up, customer)
	seeded := len(up.requests())
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Cases: smallCases()})
	if len(rep.Differences) != 0 || len(rep.Errors) != 0 {
		t.Fatalf("app data reported as differences:\n%s", showReport(rep))
	}
	for _, r := range up.requests()[seeded:] {
		users := []string{}
		var body map[string]any
		if json.Unmarshal([]byte(r.Body), &body) == nil {
			if u, ok := body["user"]; ok {
				users = append(users, strings.Trim(jsonText(u), `"`))
			}
		}
		users = append(users, r.Query["user"]...)
		for _, u := range users {
			if u == customer || u == "7" {
				t.Errorf("%s %s runs as end user %q, another user's id", r.Method, r.Path, u)
			}
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTableShowsWhereValuesDiffer: a long events row is cut so that the
// extra event is in view on both sides, not the shared prefix twice.
func TestTableShowsWhereValuesDiffer(t *testing.T) {
	shared := strings.Repeat("agent_thought,agent_message,", 4)
	rep := &verify.Report{Cases: 1, Compared: 1, Differences: []verify.Difference{{
		Case: "stream/chat-turn", Route: "POST /chat-messages", Class: "valid", Aspect: verify.AspectEvents,
		Upstream: shared + "agent_log,message_end", Mock: shared + "message_end"}}}
	table := showReport(rep)
	if !strings.Contains(table, "agent_log,message_end") {
		t.Errorf("the differing event is cut off:\n%s", table)
	}
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "agent_log") && !strings.Contains(line, "…") {
			t.Errorf("the cut is not marked: %s", line)
		}
	}
}

// TestRedirectToAnotherOrigin: a Location leading off the server shows its
// origin, so it is not taken for the mock's local redirect.
func TestRedirectToAnotherOrigin(t *testing.T) {
	up := newFakeUpstream(t, deviation{rewrite: func(req *http.Request, _ []byte, status *int, h http.Header, _ *[]byte) {
		if loc := h.Get("Location"); loc != "" {
			h.Set("Location", "https://login.example.net"+loc)
		}
	}})
	rep := run(t, verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, Cases: smallCases()})
	found := false
	for _, d := range rep.Differences {
		if d.Aspect == "location" {
			found = true
			if !strings.HasPrefix(d.Upstream, "https://login.example.net/") || strings.Contains(d.Mock, "://") {
				t.Errorf("location row %+v", d)
			}
		}
	}
	if !found {
		t.Fatalf("no location difference:\n%s", showReport(rep))
	}
}

// TestNotTheServiceAPI: an upstream that answers a web page (the console's
// address instead of the API's) ends the run saying so, in the error and
// in both reports; the table does not claim "0 difference(s)".
func TestNotTheServiceAPI(t *testing.T) {
	up := newFakeUpstream(t, deviation{before: func(w http.ResponseWriter, req *http.Request) bool {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>Dify</title><div id=root></div>"))
		return true
	}})
	rep, err := verify.Run(context.Background(), verify.Options{Upstream: up.base(), UpstreamKey: upstreamKey, MaxChatTurns: 1})
	var te *verify.TransportError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "this is not the Service API") || strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("error %v", err)
	}
	if rep == nil {
		t.Fatal("no report")
	}
	var js bytes.Buffer
	_ = rep.WriteJSON(&js)
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if e, _ := doc["error"].(string); !strings.Contains(e, "not the Service API") {
		t.Errorf("JSON report without the error: %s", js.String())
	}
	table := showReport(rep)
	if strings.Contains(table, "0 difference(s)") || !strings.Contains(table, "not compared") {
		t.Errorf("table:\n%s", table)
	}
	assertNoKey(t, "the JSON report", js.String())
}
