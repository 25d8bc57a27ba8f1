package dify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestNewClient(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:5001/v1", "http://127.0.0.1:5001/v1/", " http://127.0.0.1:5001/v1// "} {
		c, err := NewClient(base, " "+testKey+"\n")
		if err != nil {
			t.Fatalf("NewClient(%q): %v", base, err)
		}
		if got := c.BaseURL(); got != "http://127.0.0.1:5001/v1" {
			t.Errorf("NewClient(%q).BaseURL() = %q", base, got)
		}
		if c.apiKey != testKey {
			t.Errorf("key not trimmed: %q", c.apiKey)
		}
	}
	for _, base := range []string{"", "127.0.0.1:5001/v1", "ftp://h/v1", "http:///v1", "http://h/v1?x=1", "http://h/%zz"} {
		if _, err := NewClient(base, testKey); err == nil {
			t.Errorf("NewClient(%q) accepted an invalid base URL", base)
		}
	}
	_, err := NewClient("http://h/v1", "app-abc def")
	if err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("key with inner space: err = %v (must fail without quoting the key)", err)
	}
	c, err := NewClient("http://h/v1", testKey)
	if err != nil {
		t.Fatal(err)
	}
	if c.userAgent != "terraform-provider-dify/"+Version+" (+https://github.com/difyops/terraform-provider-dify)" {
		t.Errorf("default User-Agent = %q", c.userAgent)
	}
	if c.retry != DefaultRetryPolicy() {
		t.Errorf("default retry policy = %+v", c.retry)
	}
	c, _ = NewClient("http://h/v1", testKey, WithUserAgent("custom/1"), WithRetryPolicy(RetryPolicy{MaxAttempts: -3}))
	if c.userAgent != "custom/1" || c.retry.MaxAttempts != 1 {
		t.Errorf("options not applied: ua=%q attempts=%d", c.userAgent, c.retry.MaxAttempts)
	}
}

// checkCommon asserts the headers every authenticated call carries.
func checkCommon(t *testing.T, got recorded, method, path string) {
	t.Helper()
	if got.Method != method || got.Path != path {
		t.Errorf("request = %s %s, want %s %s", got.Method, got.Path, method, path)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q", a)
	}
	if ua := got.Header.Get("User-Agent"); ua != DefaultUserAgent() {
		t.Errorf("User-Agent = %q", ua)
	}
}

func checkQuery(t *testing.T, got recorded, want url.Values) {
	t.Helper()
	q, err := url.ParseQuery(got.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 && len(q) == 0 {
		return
	}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("query = %v, want %v", q, want)
	}
}

func checkJSONBody(t *testing.T, got recorded, want string) {
	t.Helper()
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var g, w any
	if err := json.Unmarshal(got.Body, &g); err != nil {
		t.Fatalf("body %q: %v", got.Body, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body = %s, want %s", got.Body, want)
	}
}

func TestServerInfo(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"welcome":"Dify OpenAPI","api_version":"v1","server_version":"1.16.0","extra":1}`)}
	c := newTestClient(t, rec)
	info, err := c.ServerInfo(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if *info != (ServerInfo{Welcome: "Dify OpenAPI", APIVersion: "v1", ServerVersion: "1.16.0"}) {
		t.Errorf("info = %+v", info)
	}
	got := rec.last(t)
	if got.Method != "GET" || got.Path != "/v1/" {
		t.Errorf("request = %s %s", got.Method, got.Path)
	}
	if _, ok := got.Header["Authorization"]; ok {
		t.Error("ServerInfo sent an Authorization header")
	}
	if got.Header.Get("User-Agent") != DefaultUserAgent() {
		t.Errorf("User-Agent = %q", got.Header.Get("User-Agent"))
	}

	custom, _ := NewClient(c.BaseURL(), testKey, WithUserAgent("my-tool/2.0"))
	if _, err := custom.ServerInfo(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if ua := rec.last(t).Header.Get("User-Agent"); ua != "my-tool/2.0" {
		t.Errorf("overridden User-Agent = %q", ua)
	}
}

func TestAppEndpoints(t *testing.T) {
	t.Run("info", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"name":"My Agent","description":"d","tags":["a"],"mode":"agent","author_name":"Dify Team","new":true}`)}
		got, err := newTestClient(t, rec).AppInfo(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		want := &AppInfo{Name: "My Agent", Description: "d", Tags: []string{"a"}, Mode: ModeAgent, AuthorName: "Dify Team"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v", got)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/info")
		checkQuery(t, rec.last(t), nil)
	})
	t.Run("parameters", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, string(parametersExample))}
		got, err := newTestClient(t, rec).AppParameters(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.UserInputForm) != 3 || got.UserInputForm[0].Control != ControlTextInput || got.SystemParameters.FileSizeLimit != 15 {
			t.Errorf("got %+v", got)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/parameters")
	})
	t.Run("meta", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"tool_icons":{"search":"https://x/icon.png","calc":{"background":"#FFF","content":"🧮"}}}`)}
		got, err := newTestClient(t, rec).AppMeta(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if string(got.ToolIcons["search"]) != `"https://x/icon.png"` || !strings.Contains(string(got.ToolIcons["calc"]), "background") {
			t.Errorf("got %v", got.ToolIcons)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/meta")
	})
	t.Run("site", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"title":"T","chat_color_theme":null,"chat_color_theme_inverted":false,"icon_type":"emoji","icon":"🤖","icon_background":"#FFFFFF","icon_url":null,"description":"d","copyright":null,"privacy_policy":"https://p","input_placeholder":null,"custom_disclaimer":"","default_language":"en-US","show_workflow_steps":false,"use_icon_as_answer_icon":true}`)}
		got, err := newTestClient(t, rec).AppSite(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != "T" || got.ChatColorTheme != nil || *got.Icon != "🤖" || !got.UseIconAsAnswerIcon || got.DefaultLanguage != "en-US" {
			t.Errorf("got %+v", got)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/site")
	})
	t.Run("end user", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"id":"eu-1","tenant_id":"t","app_id":null,"type":"service-api","external_user_id":"abc","name":null,"is_anonymous":false,"session_id":"abc","created_at":"2024-01-16T12:00:29Z","updated_at":"2024-01-16T12:00:29Z"}`)}
		got, err := newTestClient(t, rec).GetEndUser(testContext(t), "eu 1/x")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "eu-1" || got.ExternalUserID != "abc" || got.AppID != nil || got.CreatedAt != "2024-01-16T12:00:29Z" {
			t.Errorf("got %+v", got)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/end-users/eu%201%2Fx")
	})
}

func TestSuggestedQuestions(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"result":"success","data":["a?","b?"]}`)}
	c := newTestClient(t, rec)
	got, err := c.SuggestedQuestions(testContext(t), "m-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"a?", "b?"}) {
		t.Errorf("got %q", got)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/messages/m-1/suggested")
	checkQuery(t, rec.last(t), url.Values{"user": {"user-1"}})

	rec.answer(jsonReply(200, `{"result":"success","data":null}`))
	got, err = c.SuggestedQuestions(testContext(t), "m-1", "other")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("null data: got %#v, %v; want empty non-nil", got, err)
	}
	checkQuery(t, rec.last(t), url.Values{"user": {"other"}})
}

func TestListConversations(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"limit":2,"has_more":true,"data":[{"id":"c1","name":"New conversation","inputs":{"city":"Paris"},"status":"normal","introduction":null,"created_at":1705407629,"updated_at":1705411229}]}`)}
	c := newTestClient(t, rec)
	page, err := c.ListConversations(testContext(t), ListConversationsParams{LastID: "c0", Limit: 2, SortBy: SortCreatedAtDesc})
	if err != nil {
		t.Fatal(err)
	}
	if !page.HasMore || page.Limit != 2 || len(page.Data) != 1 || page.Data[0].Inputs["city"] != "Paris" || page.Data[0].UpdatedAt != 1705411229 {
		t.Errorf("page = %+v", page)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/conversations")
	checkQuery(t, rec.last(t), url.Values{"user": {"user-1"}, "last_id": {"c0"}, "limit": {"2"}, "sort_by": {"-created_at"}})

	// Zero values are left out so the server's defaults apply; out-of-range
	// values are the server's to reject (docs/api §5).
	if _, err := c.ListConversations(testContext(t), ListConversationsParams{User: "u2", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	checkQuery(t, rec.last(t), url.Values{"user": {"u2"}, "limit": {"500"}})
}

func TestListMessages(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"limit":20,"has_more":false,"data":[{"id":"m1","conversation_id":"c1","parent_message_id":null,"inputs":{},"query":"hi","answer":"hello","feedback":{"rating":"like"},"retriever_resources":[],"agent_thoughts":[{"id":"t1","chain_id":null,"message_id":"m1","position":1,"thought":"think","tool":"search","tool_labels":{},"tool_input":"{}","created_at":1,"observation":"obs","files":["f1"]}],"message_files":[{"id":"f1","filename":"a.png","type":"image","url":null,"mime_type":"image/png","size":12,"transfer_method":"tool_file","belongs_to":"assistant","upload_file_id":null}],"created_at":1705407629,"status":"normal","error":null,"message_tokens":3,"answer_tokens":4,"total_tokens":7,"provider_response_latency":1.5,"total_price":"0.001","currency":"USD","extra_contents":[]}]}`)}
	c := newTestClient(t, rec)
	page, err := c.ListMessages(testContext(t), ListMessagesParams{ConversationID: "c1", FirstID: "m9", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	m := page.Data[0]
	if m.Answer != "hello" || m.Feedback.Rating != "like" || m.AgentThoughts[0].Files[0] != "f1" || m.AgentThoughts[0].Observation != "obs" ||
		*m.MessageFiles[0].Size != 12 || m.TotalTokens != 7 || *m.TotalPrice != "0.001" {
		t.Errorf("message = %+v", m)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/messages")
	checkQuery(t, rec.last(t), url.Values{"conversation_id": {"c1"}, "user": {"user-1"}, "first_id": {"m9"}, "limit": {"20"}})
}

func TestStopChatMessage(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"result":"success"}`)}
	c := newTestClient(t, rec)
	if err := c.StopChatMessage(testContext(t), "task 1", ""); err != nil {
		t.Fatal(err)
	}
	checkCommon(t, rec.last(t), "POST", "/v1/chat-messages/task%201/stop")
	checkJSONBody(t, rec.last(t), `{"user":"user-1"}`)
	if err := c.StopChatMessage(testContext(t), "t2", "u2"); err != nil {
		t.Fatal(err)
	}
	checkJSONBody(t, rec.last(t), `{"user":"u2"}`)
}

func TestRenameConversation(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"id":"c1","name":"Trip","inputs":{},"status":"normal","introduction":"hi","created_at":1,"updated_at":2}`)}
	c := newTestClient(t, rec)
	conv, err := c.RenameConversation(testContext(t), "c1", RenameRequest{Name: "Trip"})
	if err != nil {
		t.Fatal(err)
	}
	if conv.Name != "Trip" || *conv.Introduction != "hi" || conv.UpdatedAt != 2 {
		t.Errorf("conv = %+v", conv)
	}
	checkCommon(t, rec.last(t), "POST", "/v1/conversations/c1/name")
	checkJSONBody(t, rec.last(t), `{"name":"Trip","auto_generate":false,"user":"user-1"}`)

	if _, err := c.RenameConversation(testContext(t), "c1", RenameRequest{AutoGenerate: true, User: "u2"}); err != nil {
		t.Fatal(err)
	}
	checkJSONBody(t, rec.last(t), `{"auto_generate":true,"user":"u2"}`)
}

func TestDeleteConversation(t *testing.T) {
	// Both shapes of success (docs/api §8, §21).
	for _, tc := range []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request, int)
	}{
		{"200 result success", jsonReply(200, `{"result":"success"}`)},
		{"204 empty", func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(204) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{respond: tc.respond}
			c := newTestClient(t, rec)
			if err := c.DeleteConversation(testContext(t), "c1", ""); err != nil {
				t.Fatal(err)
			}
			checkCommon(t, rec.last(t), "DELETE", "/v1/conversations/c1")
			checkJSONBody(t, rec.last(t), `{"user":"user-1"}`)
		})
	}
	t.Run("no user sends {}", func(t *testing.T) {
		rec := &recorder{respond: func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(204) }}
		srvClient := newTestClient(t, rec)
		c, _ := NewClient(srvClient.BaseURL(), testKey) // no default user
		if err := c.DeleteConversation(testContext(t), "c1", ""); err != nil {
			t.Fatal(err)
		}
		checkJSONBody(t, rec.last(t), `{}`)
	})
	t.Run("404", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(404, `{"code":"not_found","message":"Conversation Not Exists.","status":404}`)}
		err := newTestClient(t, rec).DeleteConversation(testContext(t), "c1", "")
		if !IsNotFound(err) || err.Error() != "dify: HTTP 404 not_found: Conversation Not Exists." {
			t.Errorf("err = %v", err)
		}
	})
}

func TestTextToAudio(t *testing.T) {
	rec := &recorder{respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write([]byte("ID3-audio-bytes"))
	}}
	c := newTestClient(t, rec)
	audio, err := c.TextToAudio(testContext(t), TextToAudioRequest{Text: "hello", Voice: "alloy"})
	if err != nil {
		t.Fatal(err)
	}
	defer audio.Body.Close()
	b, err := io.ReadAll(audio.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "ID3-audio-bytes" || audio.ContentType != "audio/mpeg" {
		t.Errorf("audio = %q %q", b, audio.ContentType)
	}
	checkCommon(t, rec.last(t), "POST", "/v1/text-to-audio")
	checkJSONBody(t, rec.last(t), `{"text":"hello","user":"user-1","voice":"alloy"}`)
}

func TestSendChatMessageRequest(t *testing.T) {
	stream := readTestdata(t, "new-agent.sse")
	rec := &recorder{respond: func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = w.Write(stream)
	}}
	c := newTestClient(t, rec)
	no := false
	s, err := c.SendChatMessage(testContext(t), ChatRequest{
		Query:            "Weather?",
		ResponseMode:     ResponseModeBlocking, // forced to streaming
		ConversationID:   "c1",
		Files:            []InputFile{{Type: FileTypeImage, TransferMethod: TransferLocalFile, UploadFileID: "f1"}},
		AutoGenerateName: &no,
	})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := Collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Answer != "It is sunny in Paris at 21°C." {
		t.Errorf("answer = %q", turn.Answer)
	}
	if s.StatusCode() != 200 || !strings.HasPrefix(s.Header().Get("Content-Type"), "text/event-stream") {
		t.Errorf("stream metadata: %d %v", s.StatusCode(), s.Header())
	}
	got := rec.last(t)
	checkCommon(t, got, "POST", "/v1/chat-messages")
	if got.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("Accept = %q", got.Header.Get("Accept"))
	}
	checkJSONBody(t, got, `{"query":"Weather?","inputs":{},"user":"user-1","response_mode":"streaming","conversation_id":"c1",
		"files":[{"type":"image","transfer_method":"local_file","upload_file_id":"f1"}],"auto_generate_name":false}`)

	if _, err := c.SendChatMessage(testContext(t), ChatRequest{Query: "q", User: "u9", Inputs: map[string]any{"city": "Paris"}}); err != nil {
		t.Fatal(err)
	}
	checkJSONBody(t, rec.last(t), `{"query":"q","inputs":{"city":"Paris"},"user":"u9","response_mode":"streaming"}`)
}

func TestSendChatMessageErrors(t *testing.T) {
	t.Run("error status before the stream", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(400, `{"code":"bad_request","message":"Agent App only supports streaming response mode.","status":400}`)}
		s, err := newTestClient(t, rec).SendChatMessage(testContext(t), ChatRequest{Query: "q"})
		apiErr, ok := AsAPIError(err)
		if s != nil || !ok || apiErr.Status != 400 || apiErr.Code != "bad_request" || apiErr.Stream {
			t.Errorf("stream=%v err=%#v", s, err)
		}
	})
	t.Run("blocking JSON reply", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"event":"message","answer":"hi"}`)}
		s, err := newTestClient(t, rec).SendChatMessage(testContext(t), ChatRequest{Query: "q"})
		if s != nil || err == nil || !strings.Contains(err.Error(), "expected an event stream") {
			t.Errorf("stream=%v err=%v", s, err)
		}
	})
}
