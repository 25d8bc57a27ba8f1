package fault

import "strings"

// Where a fault acts.
const (
	WhereResponse = "response" // before the response: every route
	WhereStream   = "stream"   // inside a POST /chat-messages stream
)

// Entry documents one fault of the vocabulary.
type Entry struct {
	Name    string // as written in a spec
	Syntax  string // with its argument and parameters
	Where   string // WhereResponse or WhereStream
	Summary string // what the mock does
	Example string // a complete spec
	Sees    string // what a client observes
}

// Vocabulary lists every fault, in the order `dify-mock faults` shows them.
var Vocabulary = []Entry{
	{
		Name: "slow-headers", Syntax: "slow-headers:T", Where: WhereResponse,
		Summary: "Holds the response headers back for T (500ms, 2s, 1m; not scaled by --speed), then answers normally. Combines with one other fault.",
		Example: "slow-headers:3s",
		Sees:    "time to first byte of T; a client timeout shorter than T fires",
	},
	{
		Name: "status", Syntax: "status:S[;retry-after=N][;code=C][;message=M]", Where: WhereResponse,
		Summary: "Answers HTTP S (400-599) with Dify's error envelope: 429 too_many_requests, 500 internal_server_error, 503 service_unavailable, … 502 and 504 get the HTML page of Dify's nginx unless code or message is given. retry-after adds a Retry-After header (seconds).",
		Example: "status:429;retry-after=5",
		Sees:    "an HTTP error; idempotent calls are retried by well-behaved clients, chat messages are not",
	},
	{
		Name: "empty-response", Syntax: "empty-response", Where: WhereResponse,
		Summary: "Closes the connection without sending a byte (WireMock EMPTY_RESPONSE).",
		Example: "empty-response",
		Sees:    "a transport error such as EOF or \"empty reply from server\"",
	},
	{
		Name: "connection-reset-by-peer", Syntax: "connection-reset-by-peer", Where: WhereResponse,
		Summary: "Resets the connection (TCP RST) without sending a byte (WireMock CONNECTION_RESET_BY_PEER).",
		Example: "connection-reset-by-peer",
		Sees:    "a transport error: connection reset by peer (ECONNRESET)",
	},
	{
		Name: "random-data-then-close", Syntax: "random-data-then-close", Where: WhereResponse,
		Summary: "Sends 256 bytes of garbage instead of an HTTP response, then closes (WireMock RANDOM_DATA_THEN_CLOSE). The bytes are the same every time.",
		Example: "random-data-then-close",
		Sees:    "a transport error: malformed HTTP response",
	},
	{
		Name: "malformed-response-chunk", Syntax: "malformed-response-chunk", Where: WhereResponse,
		Summary: "Sends \"200 OK\" headers, then a chunk that breaks the chunked encoding, then closes (WireMock MALFORMED_RESPONSE_CHUNK).",
		Example: "malformed-response-chunk",
		Sees:    "a 200 whose body fails to read (malformed chunked encoding)",
	},
	{
		Name: "error-after", Syntax: "error-after:K[;code=C][;status=S][;message=M]", Where: WhereStream,
		Summary: "After K frames, an in-stream Dify error event (HTTP stays 200) ends the stream, shaped as docs/api §2.5 (no task_id). Default code internal_server_error (500, \"Internal Server Error, please contact support.\"); known codes such as completion_request_error or provider_quota_exceeded bring their own status and message.",
		Example: "error-after:3;code=completion_request_error",
		Sees:    "the first K events, then an in-stream error with the code, status and message",
	},
	{
		Name: "close-after", Syntax: "close-after:K", Where: WhereStream,
		Summary: "After K frames, ends the response cleanly (no message_end): the body simply ends.",
		Example: "close-after:2",
		Sees:    "the first K events, then end of stream before message_end (a truncated stream)",
	},
	{
		Name: "reset-after", Syntax: "reset-after:K", Where: WhereStream,
		Summary: "After K frames, resets the connection (TCP RST).",
		Example: "reset-after:2",
		Sees:    "the first K events, then a read error: connection reset by peer",
	},
	{
		Name: "stall-after", Syntax: "stall-after:K;for=T[;then=continue|close|reset]", Where: WhereStream,
		Summary: "After K frames, sends nothing for T (no keep-alive pings either; wall-clock time, not scaled by --speed), then the rest of the stream follows T late (then=continue, the default), the response ends (close) or the connection is reset (reset). A client that leaves ends the stall at once.",
		Example: "stall-after:4;for=30s;then=close",
		Sees:    "the first K events, then silence for T; an idle timeout shorter than T fires",
	},
	{
		Name: "truncate", Syntax: "truncate", Where: WhereStream,
		Summary: "Sends the whole turn except its final frame (message_end, or a recorded error), then ends the response cleanly.",
		Example: "truncate",
		Sees:    "every answer event, then end of stream without message_end (a truncated stream)",
	},
	{
		Name: "malformed-after", Syntax: "malformed-after:K[;then=continue|close|reset]", Where: WhereStream,
		Summary: "After K frames, inserts a data frame whose JSON is cut off mid-string; then the stream continues unchanged (default), ends (close) or the connection is reset (reset).",
		Example: "malformed-after:1",
		Sees:    "a frame that does not decode (a frame error); with then=continue the turn still completes",
	},
	{
		Name: None, Syntax: None, Where: "",
		Summary: "No fault. In the header it also switches off the cassette's fault and the server's --fault.",
		Example: None,
		Sees:    "the recorded behaviour",
	},
}

// Names lists the vocabulary on one line (required parts only), for error
// messages.
func Names() string {
	list := make([]string, 0, len(Vocabulary))
	for _, e := range Vocabulary {
		short, _, _ := strings.Cut(e.Syntax, "[")
		list = append(list, short)
	}
	return strings.Join(list, ", ") + " (run `dify-mock faults` for details)"
}

func exampleOf(name string) string {
	for _, e := range Vocabulary {
		if e.Name == name {
			return e.Example
		}
	}
	return name
}
