package mockserver_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// TestAppDataWithTheDifyClient drives feedback, annotations, annotation
// reply, file preview and conversation variables through the project's
// client, as the provider's resources do, in both app modes.
func TestAppDataWithTheDifyClient(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mockserver.Config{Cassettes: mustBuiltin(t), Mode: mode})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := dify.NewClient(e.ts.URL+"/v1", "app-test", dify.WithUser("tf-user"))
			if err != nil {
				t.Fatal(err)
			}

			a, err := c.CreateAnnotation(ctx, dify.AnnotationRequest{Question: "What are your opening hours?", Answer: "9 to 5."})
			if err != nil {
				t.Fatal(err)
			}
			job, err := c.StartAnnotationReply(ctx, dify.AnnotationReplyEnable, dify.AnnotationReplyRequest{
				ScoreThreshold: 0.9, EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small"})
			if err != nil || job.JobStatus != dify.JobStatusWaiting {
				t.Fatalf("start: %+v %v", job, err)
			}
			if job, err = c.WaitAnnotationReply(ctx, dify.AnnotationReplyEnable, job.JobID, 10*time.Millisecond); err != nil || !job.Done() {
				t.Fatalf("wait: %+v %v", job, err)
			}

			up, err := c.UploadFile(ctx, dify.Upload{Filename: "hours.txt", Reader: strings.NewReader("Mon–Fri")})
			if err != nil {
				t.Fatal(err)
			}
			stream, err := c.SendChatMessage(ctx, dify.ChatRequest{Query: "what are your opening hours",
				Files: []dify.InputFile{{Type: dify.FileTypeDocument, TransferMethod: dify.TransferLocalFile, UploadFileID: up.ID}}})
			if err != nil {
				t.Fatal(err)
			}
			reply, err := dify.Collect(stream)
			if err != nil {
				t.Fatal(err)
			}
			ar, err := reply.Metadata.Annotation()
			if err != nil || ar == nil || ar.ID != a.ID || reply.Answer != "9 to 5." {
				t.Fatalf("reply %q, annotation %+v %v", reply.Answer, ar, err)
			}

			if err := c.SendFeedback(ctx, reply.MessageID, dify.FeedbackRequest{Rating: dify.RatingDislike}); err != nil {
				t.Fatal(err)
			}
			fb, err := c.ListAppFeedbacks(ctx, dify.ListAppFeedbacksParams{})
			if err != nil || len(fb.Data) != 1 || fb.Data[0].MessageID != reply.MessageID || fb.Data[0].Rating != dify.RatingDislike {
				t.Fatalf("feedbacks: %+v %v", fb, err)
			}
			if err := c.SendFeedback(ctx, reply.MessageID, dify.FeedbackRequest{}); err != nil {
				t.Fatal(err)
			}
			if err := c.SendFeedback(ctx, reply.MessageID, dify.FeedbackRequest{}); !dify.IsFeedbackAlreadyRevoked(err) {
				t.Errorf("second revoke: %v", err)
			}

			f, err := c.PreviewFile(ctx, up.ID, dify.FilePreviewParams{AsAttachment: true})
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(f.Body)
			f.Body.Close()
			if string(data) != "Mon–Fri" || f.Filename != "hours.txt" {
				t.Errorf("preview %q %+v", data, f)
			}

			page, err := c.ListAnnotations(ctx, dify.ListAnnotationsParams{Keyword: "opening"})
			if err != nil || page.Total != 1 || page.Data[0].HitCount != 1 {
				t.Fatalf("annotations: %+v %v", page, err)
			}
			if _, err := c.UpdateAnnotation(ctx, a.ID, dify.AnnotationRequest{Question: a.Question, Answer: "10 to 6."}); err != nil {
				t.Fatal(err)
			}
			if err := c.DeleteAnnotation(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if err := c.DeleteAnnotation(ctx, a.ID); !dify.IsNotFound(err) {
				t.Errorf("second delete: %v", err)
			}
			if _, err := c.AnnotationReplyStatus(ctx, dify.AnnotationReplyDisable, job.JobID); !dify.IsAnnotationReplyJobNotFound(err) {
				t.Errorf("job under the other action: %v", err)
			}

			_, err = c.ListConversationVariables(ctx, reply.ConversationID, dify.ListConversationVariablesParams{})
			if mode == dify.ModeAgent {
				if apiErr, ok := dify.AsAPIError(err); !ok || apiErr.Code != "not_chat_app" {
					t.Errorf("variables on agent: %v", err)
				}
			} else if err != nil {
				t.Errorf("variables on agent-chat: %v", err)
			}
		})
	}
}
