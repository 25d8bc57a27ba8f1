package fault

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Spec
		str  string
	}{
		{"", Spec{}, "none"},
		{" NONE ", Spec{}, "none"},
		{"slow-headers:1500ms", Spec{Delay: 1500 * time.Millisecond}, "slow-headers:1.5s"},
		{"status:429;retry-after=5", Spec{Before: &Before{Kind: Status, Status: 429, RetryAfter: "5"}}, "status:429;retry-after=5"},
		{"status:503; message=Down for maintenance; code=maintenance ", Spec{Before: &Before{Kind: Status, Status: 503, Code: "maintenance", Message: "Down for maintenance"}},
			"status:503;code=maintenance;message=Down for maintenance"},
		{"EMPTY_RESPONSE", Spec{Before: &Before{Kind: EmptyResponse}}, "empty-response"},
		{"Connection_Reset_By_Peer", Spec{Before: &Before{Kind: ConnectionResetByPeer}}, "connection-reset-by-peer"},
		{"RANDOM_DATA_THEN_CLOSE", Spec{Before: &Before{Kind: RandomDataThenClose}}, "random-data-then-close"},
		{"MALFORMED_RESPONSE_CHUNK", Spec{Before: &Before{Kind: MalformedResponseChunk}}, "malformed-response-chunk"},
		{"error-after:0", Spec{Stream: &Stream{Kind: ErrorAfter}}, "error-after:0"},
		{"error-after:3;status=429;code=rate_limit_error;message=Rate%20limit%3B%20retry%2C%20100%25",
			Spec{Stream: &Stream{Kind: ErrorAfter, After: 3, Code: "rate_limit_error", Status: 429, Message: "Rate limit; retry, 100%"}},
			"error-after:3;code=rate_limit_error;status=429;message=Rate limit%3B retry%2C 100%25"},
		{"error-after:1;message=%EB%AA%A8%EB%8D%B8", Spec{Stream: &Stream{Kind: ErrorAfter, After: 1, Message: "모델"}}, "error-after:1;message=%EB%AA%A8%EB%8D%B8"},
		{"error-after:1;message=%20padded%20", Spec{Stream: &Stream{Kind: ErrorAfter, After: 1, Message: " padded "}}, "error-after:1;message=%20padded%20"},
		{"close-after:2", Spec{Stream: &Stream{Kind: CloseAfter, After: 2}}, "close-after:2"},
		{"reset-after:7", Spec{Stream: &Stream{Kind: ResetAfter, After: 7}}, "reset-after:7"},
		{"stall-after:4;for=30s", Spec{Stream: &Stream{Kind: StallAfter, After: 4, For: 30 * time.Second}}, "stall-after:4;for=30s"},
		{"stall-after:4;then=RESET;for=1m", Spec{Stream: &Stream{Kind: StallAfter, After: 4, For: time.Minute, Then: ThenReset}}, "stall-after:4;for=1m0s;then=reset"},
		{"truncate", Spec{Stream: &Stream{Kind: Truncate, After: math.MaxInt}}, "truncate"},
		{"malformed-after:1;then=close", Spec{Stream: &Stream{Kind: MalformedAfter, After: 1, Then: ThenClose}}, "malformed-after:1;then=close"},
		{"malformed-after:1;then=continue", Spec{Stream: &Stream{Kind: MalformedAfter, After: 1}}, "malformed-after:1"},
		{"slow-headers:2s, error-after:3", Spec{Delay: 2 * time.Second, Stream: &Stream{Kind: ErrorAfter, After: 3}}, "slow-headers:2s,error-after:3"},
		{"status:500,slow-headers:100ms", Spec{Delay: 100 * time.Millisecond, Before: &Before{Kind: Status, Status: 500}}, "slow-headers:100ms,status:500"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got.String() != c.str {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got.String(), c.str)
		}
		if !same(got, c.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, describe(got), describe(c.want))
		}
		again, err := Parse(got.String())
		if err != nil || !same(again, got) {
			t.Errorf("canonical %q does not re-parse to the same spec: %+v %v", got.String(), describe(again), err)
		}
	}
}

func same(a, b Spec) bool {
	if a.Delay != b.Delay || (a.Before == nil) != (b.Before == nil) || (a.Stream == nil) != (b.Stream == nil) {
		return false
	}
	return (a.Before == nil || *a.Before == *b.Before) && (a.Stream == nil || *a.Stream == *b.Stream)
}

func describe(s Spec) []any {
	out := []any{s.Delay}
	if s.Before != nil {
		out = append(out, *s.Before)
	}
	if s.Stream != nil {
		out = append(out, *s.Stream)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"explode", `fault "explode": unknown fault "explode"`},
		{"error-after", `fault "error-after": error-after needs the number of frames to send before the fault (0 to 1000000), e.g. error-after:3;code=completion_request_error`},
		{"error-after:-1", "error-after needs the number of frames"},
		{"error-after:+1", "error-after needs the number of frames"},
		{"error-after:x", "error-after needs the number of frames"},
		{"close-after:2000000", "(0 to 1000000)"},
		{"truncate:3", "truncate takes no argument (it drops message_end); to end after 3 frames use close-after:3"},
		{"empty-response:1", "empty-response takes no argument, e.g. empty-response"},
		{"empty-response;x=1", `empty-response takes no parameters, got "x"`},
		{"slow-headers", "slow-headers needs a duration, e.g. slow-headers:3s"},
		{"slow-headers:5", `slow-headers "5": want a duration with a unit from 1ms to 24h0m0s`},
		{"slow-headers:0s", "want a duration with a unit"},
		{"slow-headers:25h", "want a duration with a unit"},
		{"status", "status needs an HTTP status from 400 to 599, e.g. status:429;retry-after=5"},
		{"status:200", `status "200": want an HTTP error status from 400 to 599`},
		{"status:429;retry-after=soon", "retry-after=soon: want whole seconds from 0 to 86400"},
		{"status:429;retry-after=-1", "retry-after=-1: want whole seconds"},
		{"status:429;wait=5", `status has no parameter "wait" (it takes code, message, retry-after)`},
		{"status:429;code=Too Many", "code=Too Many: want a Dify error code in snake_case"},
		{"status:429;code", `parameter "code" needs a value (key=value)`},
		{"status:429;code=", "code= is empty (leave the parameter out for the default)"},
		{"status:429;code=a;code=b", "parameter code is given twice"},
		{"error-after:1;message=100%", "message=100%: bad percent-encoding (write %25 for a literal %)"},
		{"error-after:1;status=200", `status "200": want an HTTP error status`},
		{"error-after:1;message=" + strings.Repeat("x", 1001), "message: want UTF-8 text of at most 1000 bytes"},
		{"error-after:1;message=%FF", "message: want UTF-8 text"},
		{"stall-after:3", "stall-after needs how long to stall, e.g. stall-after:3;for=10s"},
		{"stall-after:3;for=10s;then=explode", "then=explode: want continue, close or reset"},
		{"stall-after:3;for=forever", `for "forever": want a duration with a unit`},
		{"close-after:1;for=1s", `close-after takes no parameters, got "for"`},
		{"error-after:1,close-after:2", `has two stream faults ("error-after:1" and "close-after:2"); use one`},
		{"status:429,empty-response", "has two faults that replace the response"},
		{"slow-headers:1s,slow-headers:2s", "has two delays"},
		{"status:429,error-after:1", `"status:429" replaces the response, so the stream fault "error-after:1" could never happen; use one of them`},
		{"none,truncate", "none cannot be combined with other faults"},
		{"truncate,", "has an empty item (items are separated by commas)"},
		{"\xff", "not valid UTF-8"},
		{strings.Repeat("a", MaxSpecLength+1), "over the 4096-byte limit"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %q\nwant it to contain %q", c.in, err, c.want)
		}
	}
}

func TestVocabularyExamplesParse(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Vocabulary {
		if e.Name == "" || e.Summary == "" || e.Example == "" || e.Sees == "" || !strings.HasPrefix(e.Syntax, e.Name) {
			t.Errorf("incomplete entry %+v", e)
		}
		s, err := Parse(e.Example)
		if err != nil {
			t.Errorf("%s: example %q: %v", e.Name, e.Example, err)
			continue
		}
		switch e.Where {
		case WhereResponse:
			if s.Stream != nil {
				t.Errorf("%s: listed as a response fault but parses as a stream fault", e.Name)
			}
		case WhereStream:
			if s.Stream == nil {
				t.Errorf("%s: listed as a stream fault but parses as %v", e.Name, s)
			}
		}
		seen[e.Name] = true
	}
	for name := range kinds {
		if !seen[name] {
			t.Errorf("fault %q is parsed but not in Vocabulary", name)
		}
	}
}

func TestNames(t *testing.T) {
	want := "slow-headers:T, status:S, empty-response, connection-reset-by-peer, random-data-then-close, malformed-response-chunk, error-after:K, close-after:K, reset-after:K, stall-after:K;for=T, truncate, malformed-after:K, none (run `dify-mock faults` for details)"
	if got := Names(); got != want {
		t.Errorf("Names() = %q", got)
	}
}

func TestErrorEventDefaults(t *testing.T) {
	id := func() string { return "run-1234-5678" }
	cases := []struct {
		st        Stream
		code, msg string
		status    int
	}{
		{Stream{Kind: ErrorAfter}, "internal_server_error", "Internal Server Error, please contact support.", 500},
		{Stream{Kind: ErrorAfter, Code: "completion_request_error"}, "completion_request_error", "Completion request failed.", 400},
		{Stream{Kind: ErrorAfter, Code: "agent_run_limit_exceeded"}, "agent_run_limit_exceeded", "Agent run exceeded its limit of 500 model requests (agent_run_id=run-1234-5678)", 400},
		{Stream{Kind: ErrorAfter, Code: "agent_session_configuration_changed"}, "agent_session_configuration_changed", ErrorDefaults["agent_session_configuration_changed"].Message, 409},
		{Stream{Kind: ErrorAfter, Code: "agent_run_limit_exceeded", Message: "mine"}, "agent_run_limit_exceeded", "mine", 400},
		{Stream{Kind: ErrorAfter, Code: "brand_new_code"}, "brand_new_code", "Internal Server Error, please contact support.", 500},
		{Stream{Kind: ErrorAfter, Code: "completion_request_error", Status: 503}, "completion_request_error", "Completion request failed.", 503},
	}
	for _, c := range cases {
		code, status, msg := c.st.ErrorEvent(id)
		if code != c.code || status != c.status || msg != c.msg {
			t.Errorf("%+v: got %s %d %q", c.st, code, status, msg)
		}
	}
}

// TestDocsCoverTheVocabulary: the user guide names every fault.
func TestDocsCoverTheVocabulary(t *testing.T) {
	data, err := os.ReadFile("../../../docs/mock/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Vocabulary {
		if !strings.Contains(string(data), "`"+e.Name) {
			t.Errorf("docs/mock/faults.md does not mention %s", e.Name)
		}
	}
	for code := range ErrorDefaults {
		if !strings.Contains(string(data), "| `"+code+"` |") {
			t.Errorf("docs/mock/faults.md lacks the default of %s", code)
		}
	}
}
