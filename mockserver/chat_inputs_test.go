package mockserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// inputsParams is the test app with a form holding every kind the mock
// converts: a required text, a select whose default is "", a number with a
// numeric-string default, a number without default, a paragraph and a checkbox.
var inputsParams = strings.Replace(testParams,
	`"user_input_form":[{"text-input":{"label":"City","variable":"city","required":true,"default":"","max_length":10,"type":"text-input"}},{"select":{"label":"Budget","variable":"budget","required":false,"default":"","options":["low","high"],"type":"select"}}]`,
	`"user_input_form":[{"text-input":{"label":"City","variable":"city","required":true,"default":"","max_length":10,"type":"text-input"}},{"select":{"label":"Budget","variable":"budget","required":false,"default":"","options":["low","high"],"type":"select"}},{"number":{"label":"Nights","variable":"nights","required":false,"default":"2","type":"number"}},{"number":{"label":"Guests","variable":"guests","required":false,"type":"number"}},{"paragraph":{"label":"Note","variable":"note","required":false,"type":"paragraph"}},{"checkbox":{"label":"Pets","variable":"pets","required":false,"default":false,"type":"checkbox"}}]`, 1)

// TestStoredInputsFollowPrepareUserInputs encodes
// BaseAppGenerator._prepare_user_inputs, _validate_inputs and _sanitize_value
// (api/core/app/apps/base_app_generator.py) as GET /conversations and
// GET /messages show them: a key for every form variable and no other, the
// value given else the form's default else null, number strings converted,
// NUL bytes stripped; and MessageBasedAppGenerator._init_generate_records
// (api/core/app/apps/message_based_app_generator.py): the conversation keeps
// its first turn's inputs, each message stores its own turn's.
func TestStoredInputsFollowPrepareUserInputs(t *testing.T) {
	if !strings.Contains(inputsParams, `"nights"`) {
		t.Fatal("the test app's form was not extended; testParams changed")
	}
	e := newEnv(t, mockserver.Config{Cassettes: testSet(t, inputsParams)})
	_, first := e.chat(map[string]any{"query": "First question", "user": "ivy", "response_mode": "streaming",
		"inputs": map[string]any{"city": "Se\x00oul", "guests": " 4.50 ", "pets": "yes", "stray": "dropped"}})
	conv := first[0].str("conversation_id")
	wantFirst := `{"budget":"","city":"Seoul","guests":4.5,"nights":2,"note":null,"pets":true}`

	// A follow-up gives its own inputs; 2.0 stays a float, as Python's json reads it.
	resp, body := e.do(http.MethodPost, "/chat-messages",
		`{"query":"Second question","user":"ivy","response_mode":"streaming","conversation_id":"`+conv+`","inputs":{"city":"Paris","budget":"low","nights":2.0,"guests":"1_000","note":"a\u0000b","pets":0}}`,
		"Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("follow-up: %d %s", resp.StatusCode, body)
	}
	wantSecond := `{"budget":"low","city":"Paris","guests":1000,"nights":2.0,"note":"ab","pets":false}`

	_, body = e.do(http.MethodGet, "/conversations?user=ivy", nil)
	convs := decode[struct {
		Data []struct {
			Inputs json.RawMessage `json:"inputs"`
		} `json:"data"`
	}](t, body)
	if len(convs.Data) != 1 || canonical(t, convs.Data[0].Inputs) != wantFirst {
		t.Errorf("conversation inputs = %s, want the first turn's %s", body, wantFirst)
	}
	_, body = e.do(http.MethodGet, "/messages?user=ivy&conversation_id="+conv, nil)
	msgs := decode[struct {
		Data []struct {
			Inputs json.RawMessage `json:"inputs"`
		} `json:"data"`
	}](t, body)
	if len(msgs.Data) != 2 {
		t.Fatalf("messages: %s", body)
	}
	if got := canonical(t, msgs.Data[0].Inputs); got != wantFirst {
		t.Errorf("first message inputs = %s, want %s", got, wantFirst)
	}
	if got := canonical(t, msgs.Data[1].Inputs); got != wantSecond {
		t.Errorf("second message inputs = %s, want %s", got, wantSecond)
	}

	// What _validate_inputs refuses is still refused, on any turn.
	for _, c := range []struct{ inputs, msg string }{
		{`{"city":"Oslo","nights":"1e5"}`, "nights in input form must be a valid number"},
		{`{"city":"Oslo","guests":[1]}`, "guests in input form must be a valid number"},
		{`{"city":"Oslo","budget":"mid"}`, "budget in input form must be one of the following: ['low', 'high']"},
		{`{"city":null}`, "city is required in input form"},
	} {
		resp, body := e.do(http.MethodPost, "/chat-messages",
			`{"query":"First question","user":"ivy","response_mode":"streaming","inputs":`+c.inputs+`}`, "Content-Type", "application/json")
		e.wantError(resp, body, 400, "invalid_param", c.msg)
	}
}

// canonical re-spells a JSON object with sorted keys, keeping each number's
// spelling (5 and 5.0 differ on the wire and in Dify).
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("inputs %s: %v", raw, err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
