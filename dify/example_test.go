package dify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/difyops/terraform-provider-dify/dify"
)

// agentTurn is a small New Agent reply (docs/api §2.6): a thought, a tool call
// whose row is re-emitted with its result, answer deltas, the closing
// message and message_end.
var agentTurn = []string{
	`event: ping`,
	`data: {"event":"agent_thought","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"th-1","position":1,"thought":"I should check the weather.","observation":null,"tool":null,"tool_labels":{},"tool_input":null,"message_files":[]}`,
	`data: {"event":"agent_thought","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"th-2","position":2,"thought":null,"observation":null,"tool":"weather","tool_labels":{},"tool_input":"{\"city\":\"Paris\"}","message_files":[]}`,
	`data: {"event":"agent_thought","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"th-2","position":2,"thought":null,"observation":"sunny, 21°C","tool":"weather","tool_labels":{},"tool_input":"{\"city\":\"Paris\"}","message_files":[]}`,
	`data: {"event":"agent_message","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"m-1","answer":"It is sunny "}`,
	`data: {"event":"agent_message","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"m-1","answer":"in Paris (21°C)."}`,
	`data: {"event":"message","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"m-1","answer":"It is sunny in Paris (21°C).","from_variable_selector":null}`,
	`data: {"event":"message_end","conversation_id":"c-1","message_id":"m-1","created_at":1760000000,"task_id":"t-1","id":"m-1","metadata":{"usage":{"prompt_tokens":120,"completion_tokens":12,"total_tokens":132,"total_price":"0.0003","currency":"USD","latency":1.2}},"files":null}`,
}

// newAgentServer stands in for Dify: it streams agentTurn on POST
// /v1/chat-messages.
func newAgentServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat-messages" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, frame := range agentTurn {
			fmt.Fprintf(w, "%s\n\n", frame)
			w.(http.Flusher).Flush()
		}
	}))
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// Send a chat message and fold the streamed reply into its final answer and
// agent thoughts.
func ExampleClient_SendChatMessage() {
	srv := newAgentServer()
	defer srv.Close()

	client, err := dify.NewClient(srv.URL+"/v1", "app-example-key", dify.WithUser("user-123"))
	if err != nil {
		log.Fatal(err)
	}
	stream, err := client.SendChatMessage(context.Background(), dify.ChatRequest{Query: "What is the weather in Paris?"})
	if err != nil {
		log.Fatal(err) // e.g. *dify.APIError for a 4xx before the stream started
	}
	turn, err := dify.Collect(stream)
	if err != nil {
		log.Fatal(err) // an in-stream error event, or a truncated stream
	}

	fmt.Println("conversation:", turn.ConversationID)
	fmt.Println("answer:", turn.Answer)
	for _, t := range turn.Thoughts {
		fmt.Printf("thought %d: thought=%s tool=%s input=%s observation=%s\n",
			t.Position, deref(t.Thought), deref(t.Tool), deref(t.ToolInput), deref(t.Observation))
	}
	fmt.Println("tokens:", turn.Usage.TotalTokens)
	// Output:
	// conversation: c-1
	// answer: It is sunny in Paris (21°C).
	// thought 1: thought=I should check the weather. tool=- input=- observation=-
	// thought 2: thought=- tool=weather input={"city":"Paris"} observation=sunny, 21°C
	// tokens: 132
}

// Read the events one by one, e.g. to show the answer while it is written.
func ExampleChatStream_Next() {
	srv := newAgentServer()
	defer srv.Close()

	client, err := dify.NewClient(srv.URL+"/v1", "app-example-key", dify.WithUser("user-123"))
	if err != nil {
		log.Fatal(err)
	}
	stream, err := client.SendChatMessage(context.Background(), dify.ChatRequest{Query: "What is the weather in Paris?"})
	if err != nil {
		log.Fatal(err)
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Fatal(err) // dify.ErrTruncatedStream if the reply was cut off
		}
		switch e := ev.(type) {
		case *dify.AgentMessageEvent:
			fmt.Printf("delta: %q\n", e.Answer)
		case *dify.AgentThoughtEvent:
			fmt.Printf("thought %s updated\n", e.ID)
		case *dify.MessageEndEvent:
			fmt.Println("done, tokens:", e.Metadata.Usage.TotalTokens)
		}
	}
	// Output:
	// thought th-1 updated
	// thought th-2 updated
	// thought th-2 updated
	// delta: "It is sunny "
	// delta: "in Paris (21°C)."
	// done, tokens: 132
}
