package replay

import (
	"encoding/json"
	"strings"
	"testing"
)

// A message_end the mock makes up (a stopped turn without a recorded one)
// carries every key of Dify's LLMUsage, the timing keys null, as annotation
// turns and recorded model turns do: a client that reads
// usage.time_to_first_token finds the key on every turn.
func TestMadeUpMessageEndHasEveryUsageKey(t *testing.T) {
	frame := string(Binding{MessageID: "m", ConversationID: "c", TaskID: "t"}.MessageEndFrame())
	payload := strings.TrimSuffix(strings.TrimPrefix(frame, "data: "), "\n\n")
	var ev struct {
		Metadata struct {
			Usage map[string]any `json:"usage"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(payload), &ev); err != nil {
		t.Fatalf("%v in %q", err, frame)
	}
	for _, key := range []string{"prompt_tokens", "prompt_unit_price", "prompt_price_unit", "prompt_price",
		"completion_tokens", "completion_unit_price", "completion_price_unit", "completion_price",
		"total_tokens", "total_price", "currency", "latency", "time_to_first_token", "time_to_generate"} {
		v, ok := ev.Metadata.Usage[key]
		if !ok {
			t.Errorf("usage lacks %q: %s", key, payload)
		}
		if strings.HasPrefix(key, "time_to_") && v != nil {
			t.Errorf("usage.%s = %v, want null", key, v)
		}
	}
}
