package mockserver_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestWithTheDifyClient drives the mock through the project's own client, as
// the provider does: every operation, and state consistency between them.
func TestWithTheDifyClient(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: mustBuiltin(t)})
	ctx := context.Background()
	c, err := dify.NewClient(e.ts.URL+"/v1", "app-test", dify.WithUser("tf-user"))
	if err != nil {
		t.Fatal(err)
	}
	if si, err := c.ServerInfo(ctx); err != nil || si.Welcome != "Dify OpenAPI" {
		t.Fatalf("server info: %+v %v", si, err)
	}
	info, err := c.AppInfo(ctx)
	if err != nil || info.Mode != dify.ModeAgent || info.Name == "" {
		t.Fatalf("info: %+v %v", info, err)
	}
	params, err := c.AppParameters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppMeta(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppSite(ctx); err != nil {
		t.Fatal(err)
	}

	up, err := c.UploadFile(ctx, dify.Upload{Filename: "notes.txt", Reader: strings.NewReader("day 1: Seoul")})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := c.GetEndUser(ctx, *up.CreatedBy); err != nil || u.ExternalUserID != "tf-user" {
		t.Fatalf("end user: %+v %v", u, err)
	}

	stream, err := c.SendChatMessage(ctx, dify.ChatRequest{Query: "Hello", Inputs: map[string]any{}, User: "tf-user",
		Files: []dify.InputFile{{Type: dify.FileTypeDocument, TransferMethod: dify.TransferLocalFile, UploadFileID: up.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := dify.Collect(stream)
	if err != nil || !turn.Completed || turn.Answer == "" {
		t.Fatalf("turn: %+v %v", turn, err)
	}
	page, err := c.ListConversations(ctx, dify.ListConversationsParams{User: "tf-user", SortBy: dify.SortCreatedAt})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != turn.ConversationID {
		t.Fatalf("conversations: %+v %v", page, err)
	}
	msgs, err := c.ListMessages(ctx, dify.ListMessagesParams{ConversationID: turn.ConversationID, User: "tf-user"})
	if err != nil || len(msgs.Data) != 1 {
		t.Fatalf("messages: %+v %v", msgs, err)
	}
	m := msgs.Data[0]
	if m.ID != turn.MessageID || m.Answer != turn.Answer || len(m.AgentThoughts) != len(turn.Thoughts) || len(m.MessageFiles) != 1 {
		t.Errorf("stored message differs from the streamed turn:\nstored %+v\nturn   %+v", m, turn)
	}
	if turn.Usage != nil && m.TotalTokens != turn.Usage.TotalTokens {
		t.Errorf("tokens %d vs %d", m.TotalTokens, turn.Usage.TotalTokens)
	}
	if params.SuggestedQuestionsAfterAnswer.Enabled {
		if _, err := c.SuggestedQuestions(ctx, turn.MessageID, "tf-user"); err != nil {
			t.Errorf("suggested: %v", err)
		}
	}
	conv, err := c.RenameConversation(ctx, turn.ConversationID, dify.RenameRequest{Name: "Renamed", User: "tf-user"})
	if err != nil || conv.Name != "Renamed" {
		t.Fatalf("rename: %+v %v", conv, err)
	}
	if err := c.StopChatMessage(ctx, turn.TaskID, "tf-user"); err != nil {
		t.Errorf("stop after the end: %v", err)
	}
	if params.SpeechToText.Enabled {
		if _, err := c.AudioToText(ctx, dify.Upload{Filename: "a.mp3", ContentType: "audio/mp3", Reader: strings.NewReader("x")}); err != nil {
			t.Errorf("audio-to-text: %v", err)
		}
	}
	if params.TextToSpeech.Enabled {
		audio, err := c.TextToAudio(ctx, dify.TextToAudioRequest{MessageID: turn.MessageID, User: "tf-user"})
		if err != nil {
			t.Fatalf("text-to-audio: %v", err)
		}
		data, _ := io.ReadAll(audio.Body)
		audio.Body.Close()
		if audio.ContentType != "audio/mpeg" || len(data) == 0 {
			t.Errorf("audio %q %d bytes", audio.ContentType, len(data))
		}
	}
	if err := c.DeleteConversation(ctx, turn.ConversationID, "tf-user"); err != nil {
		t.Fatal(err)
	}
	err = c.DeleteConversation(ctx, turn.ConversationID, "tf-user")
	if !dify.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
	_, err = c.ListMessages(ctx, dify.ListMessagesParams{ConversationID: turn.ConversationID, User: "tf-user"})
	var apiErr *dify.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "not_found" {
		t.Errorf("messages after delete: %v", err)
	}
	// A recorded run-limit error reaches the client as an in-stream APIError.
	if rl, ok := e.srv.Cassette("run-limit"); ok {
		stream, err = c.SendChatMessage(ctx, dify.ChatRequest{Query: rl.Turns[0].Request.Query, Inputs: map[string]any{}, User: "tf-user"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = dify.Collect(stream)
		if !errors.As(err, &apiErr) || apiErr.Code != "agent_run_limit_exceeded" || apiErr.Status != 400 {
			t.Errorf("run limit: %v", err)
		}
	}
}
