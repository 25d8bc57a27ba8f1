package mockserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// builtinEnv serves the built-in cassettes with no delays.
func builtinEnv(t *testing.T, edit func(*mockserver.Config)) *env {
	t.Helper()
	set, err := mockserver.BuiltinSet()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mockserver.Config{Cassettes: set}
	if edit != nil {
		edit(&cfg)
	}
	return newEnv(t, cfg)
}

func ask(e *env, query string, extra ...any) *http.Response {
	e.t.Helper()
	body := map[string]any{"query": query, "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	resp := e.send(http.MethodPost, "/chat-messages", body, mockserver.HeaderSpeed, "0")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%q: HTTP %d", query, resp.StatusCode)
	}
	return resp
}

// The examples of docs/mock/hybrid.md ("Nearest recorded turn"): other
// words, word order, case and punctuation pick the right recorded turn; an
// unrelated query gets the default cassette; the headers say why.
func TestNearestRecordedTurn(t *testing.T) {
	e := builtinEnv(t, nil)
	for _, tc := range []struct {
		query, cassette string
		turn            int
		match           string
		score           string
	}{
		{"What's the weather in Paris?", "legacy-agent-chat", 0, "exact", ""},
		{"what's the weather in paris", "legacy-agent-chat", 0, "similar", "1.000"},
		{"Weather in Paris today?", "legacy-agent-chat", 0, "similar", "0.612"},
		{"paris WEATHER, in the what's?", "legacy-agent-chat", 0, "similar", "1.000"},
		{"Find a hotel in Paris", "run-limit", 0, "similar", "0.671"},
		{"How much do three nights in Lisbon cost for two people?", "tool-use", 0, "similar", "0.704"},
		// A follow-up's words still pick a first turn when one scores higher…
		{"city for a weekend trip in october", "two-turn", 0, "similar", "0.837"},
		// …and the follow-up turn itself when it is the closest.
		{"how do we get there from berlin by train", "two-turn", 1, "similar", "1.000"},
		{"Tell me a joke", "plain-answer", 0, "default", ""},
		{"hotel paris cheap", "plain-answer", 0, "default", ""}, // 0.298: below the threshold
	} {
		resp := ask(e, tc.query)
		h := resp.Header
		if h.Get(mockserver.HeaderCassette) != tc.cassette || h.Get(mockserver.HeaderTurn) != strconv.Itoa(tc.turn) ||
			h.Get(mockserver.HeaderMatch) != tc.match || h.Get(mockserver.HeaderScore) != tc.score {
			t.Errorf("%q: cassette %s turn %s match %s score %q; want %s %d %s %q", tc.query,
				h.Get(mockserver.HeaderCassette), h.Get(mockserver.HeaderTurn), h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderScore),
				tc.cassette, tc.turn, tc.match, tc.score)
		}
	}

	// The journal says the same (the console shows it).
	body := journalJSON(t, e.ts.URL)
	var list struct {
		Entries []struct {
			Cassette string   `json:"cassette"`
			Match    string   `json:"match"`
			Score    *float64 `json:"score"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("journal: %v: %s", err, body)
	}
	found := false
	for _, en := range list.Entries {
		if en.Cassette == "run-limit" && en.Match == "similar" && en.Score != nil && *en.Score > 0.67 && *en.Score < 0.68 {
			found = true
		}
	}
	if !found {
		t.Errorf("no journal entry says run-limit was picked as similar with its score: %s", body)
	}
}

// The threshold is honoured, and --match exact keeps the old behaviour.
func TestNearestTurnThresholdAndExactMatch(t *testing.T) {
	strict := builtinEnv(t, func(c *mockserver.Config) { c.MatchThreshold = 0.7 })
	if h := ask(strict, "Find a hotel in Paris").Header; h.Get(mockserver.HeaderMatch) != "default" || h.Get(mockserver.HeaderCassette) != "plain-answer" {
		t.Errorf("0.671 under a 0.7 threshold: match %s cassette %s", h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderCassette))
	}
	if h := ask(strict, "How much do three nights in Lisbon cost for two people?").Header; h.Get(mockserver.HeaderCassette) != "tool-use" {
		t.Errorf("0.704 over a 0.7 threshold: cassette %s", h.Get(mockserver.HeaderCassette))
	}
	exact := builtinEnv(t, func(c *mockserver.Config) { c.Match = mockserver.MatchExact })
	if h := ask(exact, "Weather in Paris today?").Header; h.Get(mockserver.HeaderMatch) != "default" || h.Get(mockserver.HeaderScore) != "" {
		t.Errorf("--match exact: match %s score %q", h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderScore))
	}
	if h := ask(exact, "  what's the WEATHER in Paris?").Header; h.Get(mockserver.HeaderMatch) != "exact" || h.Get(mockserver.HeaderCassette) != "legacy-agent-chat" {
		t.Errorf("--match exact still folds case and spacing: match %s cassette %s", h.Get(mockserver.HeaderMatch), h.Get(mockserver.HeaderCassette))
	}
	if _, err := mockserver.New(mockserver.Config{Match: "fuzzy"}); err == nil {
		t.Error("Match fuzzy accepted")
	}
	if _, err := mockserver.New(mockserver.Config{MatchThreshold: 1.5}); err == nil {
		t.Error("MatchThreshold 1.5 accepted")
	}
}

// A follow-up keeps following its cassette, whatever its words.
func TestNearestTurnLeavesFollowUpsOnTheirCassette(t *testing.T) {
	e := builtinEnv(t, nil)
	resp, frames := e.chat(map[string]any{"query": "Which city is good for a weekend trip in October?", "user": "fe-dev", "inputs": map[string]any{}, "response_mode": "streaming"},
		mockserver.HeaderSpeed, "0")
	conv := frames[0].str("conversation_id")
	if resp.Header.Get(mockserver.HeaderCassette) != "two-turn" || conv == "" {
		t.Fatalf("first turn: %s %q", resp.Header.Get(mockserver.HeaderCassette), conv)
	}
	h := ask(e, "What's the weather in Paris?", "conversation_id", conv).Header
	if h.Get(mockserver.HeaderCassette) != "two-turn" || h.Get(mockserver.HeaderTurn) != "1" || h.Get(mockserver.HeaderMatch) != "conversation" {
		t.Errorf("follow-up: cassette %s turn %s match %s", h.Get(mockserver.HeaderCassette), h.Get(mockserver.HeaderTurn), h.Get(mockserver.HeaderMatch))
	}
}

// journalJSON is the control API's journal listing.
func journalJSON(t *testing.T, base string) []byte {
	t.Helper()
	resp, err := http.Get(base + "/__mock/api/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("journal: %d %s", resp.StatusCode, body)
	}
	return body
}
