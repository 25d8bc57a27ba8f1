package mockserver_test

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Encodes conversation.py ConversationVariablesApi.get and
// ConversationVariableDetailApi.put (docs/api §31): `agent` apps are not
// chat apps for these routes (400 not_chat_app, before any other check);
// an agent-chat conversation has no variables (Dify creates them only for
// workflow apps).
func TestConversationVariables(t *testing.T) {
	agent := newEnv(t, mockserver.Config{Mode: dify.ModeAgent})
	conv, _ := agent.chatTurn("Count to three", "alice")
	const missing = "00000000-0000-4000-8000-000000000000"
	resp, body := agent.do("GET", "/conversations/"+conv+"/variables?user=alice&limit=0", nil)
	agent.wantError(resp, body, 400, "not_chat_app", "Please check if your app mode matches the right API route.")
	resp, body = agent.do("PUT", "/conversations/"+conv+"/variables/"+missing, map[string]any{"user": "alice"})
	agent.wantError(resp, body, 400, "not_chat_app", "Please check if your app mode matches the right API route.")

	e := newEnv(t, mockserver.Config{Mode: dify.ModeAgentChat})
	conv, _ = e.chatTurn("Count to three", "alice")
	base := "/conversations/" + conv + "/variables"
	resp, body = e.do("GET", base+"?user=alice&variable_name=topic", nil)
	if resp.StatusCode != 200 || string(body) != `{"limit":20,"has_more":false,"data":[]}`+"\n" {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", base+"?user=bob", nil)
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
	resp, body = e.do("GET", base+"?user=alice&limit=101", nil)
	e.wantError(resp, body, 400, "invalid_param", pyMsg("ConversationVariablesQuery", "limit",
		"Input should be less than or equal to 100", "less_than_equal", "'101'", "str"))
	resp, body = e.do("GET", base+"?user=alice&variable_name=a%20b", nil)
	e.wantError(resp, body, 400, "invalid_param", pyMsg("ConversationVariablesQuery", "variable_name",
		"Value error, Variable name can only contain letters, numbers, hyphens (-), underscores (_), and periods (.)", "value_error", "'a b'", "str"))
	resp, body = e.do("GET", base+"?user=alice&variable_name=sp_who", nil)
	e.wantError(resp, body, 400, "invalid_param", pyMsg("ConversationVariablesQuery", "variable_name",
		"Value error, Variable name contains invalid characters: sp_", "value_error", "'sp_who'", "str"))
	// An unknown last_id: ConversationVariableNotExistsError is not caught.
	resp, body = e.do("GET", base+"?user=alice&last_id="+missing, nil)
	e.wantError(resp, body, 400, "invalid_param", "")

	resp, body = e.do("PUT", base+"/"+missing, map[string]any{"user": "alice"})
	e.wantError(resp, body, 400, "invalid_param", pyMsg("ConversationVariableUpdatePayload", "value", "Field required", "missing", "{'user': 'alice'}", "dict"))
	resp, body = e.do("PUT", base+"/"+missing, map[string]any{"user": "alice", "value": nil})
	e.wantError(resp, body, 404, "not_found", "Conversation Variable Not Exists.")
	resp, body = e.do("PUT", base+"/"+missing, map[string]any{"user": "bob", "value": 1})
	e.wantError(resp, body, 404, "not_found", "Conversation Not Exists.")
	resp, body = e.do("PUT", base+"/nope", map[string]any{"user": "alice", "value": 1})
	wantHTML404(t, resp, body)
}
