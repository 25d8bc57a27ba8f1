package mockserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// TestConversationPageIsMarshal: the listing put together from the rows'
// JSON is byte for byte what encoding the whole page gives, HTML escapes,
// non-ASCII text, nulls and every limit and has_more included.
func TestConversationPageIsMarshal(t *testing.T) {
	intro := "Hi <b>there</b> & welcome"
	convs := []dify.Conversation{
		{ID: "a", Name: "New conversation", Inputs: map[string]any{}, Status: "normal", CreatedAt: 1, UpdatedAt: 2},
		{ID: "b", Name: "Lisbon <3 & \"Porto\"", Inputs: map[string]any{"city": "Évora", "nights": 3.0, "z": nil, "a": []any{"x", map[string]any{"k": true}}},
			Status: "normal", Introduction: &intro, CreatedAt: 1_700_000_000, UpdatedAt: 1_700_000_100},
		{ID: "c", Name: "日本語 \u2028 line", Inputs: map[string]any{"html": "<script>"}, Status: "normal", CreatedAt: -5, UpdatedAt: 0},
	}
	for _, n := range []int{0, 1, 3} {
		for _, limit := range []int{0, 1, 20, 100} {
			for _, more := range []bool{false, true} {
				rows := make([]store.ListedConversation, n)
				for i, c := range convs[:n] {
					data, err := json.Marshal(c)
					if err != nil {
						t.Fatal(err)
					}
					rows[i] = store.ListedConversation{ID: c.ID, Name: c.Name, JSON: data}
				}
				want, err := json.Marshal(dify.ConversationPage{Limit: limit, HasMore: more, Data: append([]dify.Conversation{}, convs[:n]...)})
				if err != nil {
					t.Fatal(err)
				}
				if got := conversationPage(limit, more, rows); !bytes.Equal(got, want) {
					t.Fatalf("%d rows, limit %d, has_more %v:\n got %s\nwant %s", n, limit, more, got, want)
				}
			}
		}
	}
}

// TestListingFollowsRenames: a listing made before a rename and one
// after show each name as it was, though the second reuses the first's
// work where nothing changed.
func TestListingFollowsRenames(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) []byte {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer app-test")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set(HeaderSpeed, "0")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	var ids []string
	for _, q := range []string{"first", "second"} {
		stream := string(do(http.MethodPost, "/v1/chat-messages", `{"query":"`+q+`","inputs":{},"user":"u","response_mode":"streaming"}`))
		_, rest, ok := strings.Cut(stream, `"conversation_id":`)
		id := strings.Trim(strings.TrimSpace(strings.SplitN(rest, ",", 2)[0]), `"`)
		if !ok || id == "" {
			t.Fatalf("chat: no conversation id in %.300s", stream)
		}
		ids = append(ids, id)
	}
	list := func() map[string]string {
		var page dify.ConversationPage
		if err := json.Unmarshal(do(http.MethodGet, "/v1/conversations?user=u", ""), &page); err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, c := range page.Data {
			names[c.ID] = c.Name
		}
		return names
	}
	before := list()
	do(http.MethodPost, "/v1/conversations/"+ids[0]+"/name", `{"name":"Renamed <here>","user":"u"}`)
	after := list()
	if after[ids[0]] != "Renamed <here>" || after[ids[1]] != before[ids[1]] || len(after) != 2 {
		t.Fatalf("before the rename %v, after %v", before, after)
	}
}
