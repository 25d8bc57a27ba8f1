package dify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSendFeedback(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"result":"success"}`)}
	c := newTestClient(t, rec)
	comment := "helpful"
	if err := c.SendFeedback(testContext(t), "m 1", FeedbackRequest{Rating: RatingLike, Content: &comment}); err != nil {
		t.Fatal(err)
	}
	checkCommon(t, rec.last(t), "POST", "/v1/messages/m%201/feedbacks")
	checkJSONBody(t, rec.last(t), `{"rating":"like","content":"helpful","user":"user-1"}`)

	// A revoke is rating null (MessageFeedbackPayload.rating is Literal | None).
	if err := c.SendFeedback(testContext(t), "m1", FeedbackRequest{User: "u2"}); err != nil {
		t.Fatal(err)
	}
	checkJSONBody(t, rec.last(t), `{"rating":null,"user":"u2"}`)

	rec.answer(jsonReply(400, `{"code":"invalid_param","message":"rating cannot be None when feedback not exists","status":400}`))
	err := c.SendFeedback(testContext(t), "m1", FeedbackRequest{})
	if !IsFeedbackAlreadyRevoked(err) {
		t.Errorf("revoke without feedback: %v, want IsFeedbackAlreadyRevoked", err)
	}
	rec.answer(jsonReply(400, `{"code":"invalid_param","message":"other","status":400}`))
	if err := c.SendFeedback(testContext(t), "m1", FeedbackRequest{Rating: "meh"}); err == nil || IsFeedbackAlreadyRevoked(err) {
		t.Errorf("other 400: %v", err)
	}
}

func TestListAppFeedbacks(t *testing.T) {
	rec := &recorder{respond: jsonReply(200, `{"data":[{"id":"f1","app_id":"a","conversation_id":"c","message_id":"m","rating":"dislike","content":null,"from_source":"user","from_end_user_id":"eu","from_account_id":null,"created_at":"2025-05-13T08:21:47.123456","updated_at":"2025-05-13T08:21:47.123456"}]}`)}
	c := newTestClient(t, rec)
	page, err := c.ListAppFeedbacks(testContext(t), ListAppFeedbacksParams{Page: 2, Limit: 101})
	if err != nil {
		t.Fatal(err)
	}
	f := page.Data[0]
	if f.Rating != RatingDislike || f.Content != nil || f.FromSource != FeedbackFromUser || *f.FromEndUserID != "eu" || f.FromAccountID != nil || f.CreatedAt != "2025-05-13T08:21:47.123456" {
		t.Errorf("feedback = %+v", f)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/app/feedbacks")
	// No user: the route runs as the workspace owner (docs/api §26).
	checkQuery(t, rec.last(t), url.Values{"page": {"2"}, "limit": {"101"}})

	rec.answer(jsonReply(200, `{"data":null}`))
	page, err = c.ListAppFeedbacks(testContext(t), ListAppFeedbacksParams{})
	if err != nil || page.Data == nil || len(page.Data) != 0 {
		t.Errorf("null data: %+v, %v", page, err)
	}
	checkQuery(t, rec.last(t), nil)
}

func TestAnnotations(t *testing.T) {
	const item = `{"id":"a1","question":"What is X?","answer":"X is Y.","hit_count":3,"created_at":1705395332}`
	want := Annotation{ID: "a1", Question: "What is X?", Answer: "X is Y.", HitCount: 3, CreatedAt: 1705395332}

	t.Run("list", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, `{"data":[`+item+`],"has_more":false,"limit":5,"total":1,"page":2}`)}
		c := newTestClient(t, rec)
		page, err := c.ListAnnotations(testContext(t), ListAnnotationsParams{Page: 2, Limit: 5, Keyword: "x y"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(page, &AnnotationPage{Data: []Annotation{want}, Limit: 5, Total: 1, Page: 2}) {
			t.Errorf("page = %+v", page)
		}
		checkCommon(t, rec.last(t), "GET", "/v1/apps/annotations")
		checkQuery(t, rec.last(t), url.Values{"page": {"2"}, "limit": {"5"}, "keyword": {"x y"}})
	})
	t.Run("create", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(201, item)}
		c := newTestClient(t, rec)
		got, err := c.CreateAnnotation(testContext(t), AnnotationRequest{Question: "What is X?", Answer: "X is Y."})
		if err != nil || *got != want {
			t.Fatalf("got %+v, %v", got, err)
		}
		checkCommon(t, rec.last(t), "POST", "/v1/apps/annotations")
		checkJSONBody(t, rec.last(t), `{"question":"What is X?","answer":"X is Y."}`)

		// Creating is never retried once sent: a retry could add a duplicate.
		rec.answer(jsonReply(503, `{"code":"unknown","message":"busy","status":503}`))
		before := rec.count()
		if _, err := c.CreateAnnotation(testContext(t), AnnotationRequest{Question: "q", Answer: "a"}); err == nil {
			t.Fatal("503 accepted")
		}
		if n := rec.count() - before; n != 1 {
			t.Errorf("create sent %d times on 503, want 1", n)
		}
	})
	t.Run("update", func(t *testing.T) {
		rec := &recorder{respond: jsonReply(200, item)}
		c := newTestClient(t, rec)
		got, err := c.UpdateAnnotation(testContext(t), "a1", AnnotationRequest{Question: "What is X?", Answer: "X is Y."})
		if err != nil || *got != want {
			t.Fatalf("got %+v, %v", got, err)
		}
		checkCommon(t, rec.last(t), "PUT", "/v1/apps/annotations/a1")
		checkJSONBody(t, rec.last(t), `{"question":"What is X?","answer":"X is Y."}`)
	})
	t.Run("delete", func(t *testing.T) {
		rec := &recorder{respond: func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(204) }}
		c := newTestClient(t, rec)
		if err := c.DeleteAnnotation(testContext(t), "a1"); err != nil {
			t.Fatal(err)
		}
		checkCommon(t, rec.last(t), "DELETE", "/v1/apps/annotations/a1")
		if len(rec.last(t).Body) != 0 {
			t.Errorf("delete sent a body: %q", rec.last(t).Body)
		}
		rec.answer(jsonReply(404, `{"code":"not_found","message":"Annotation not found","status":404}`))
		if err := c.DeleteAnnotation(testContext(t), "a1"); !IsNotFound(err) {
			t.Errorf("second delete: %v, want IsNotFound", err)
		}
	})
}

func TestAnnotationReplyJobs(t *testing.T) {
	settings := AnnotationReplyRequest{ScoreThreshold: 0.9, EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small"}
	rec := &recorder{respond: jsonReply(200, `{"job_id":"j1","job_status":"waiting"}`)}
	c := newTestClient(t, rec)
	job, err := c.StartAnnotationReply(testContext(t), AnnotationReplyEnable, settings)
	if err != nil {
		t.Fatal(err)
	}
	if *job != (AnnotationReplyJob{JobID: "j1", JobStatus: JobStatusWaiting}) || job.Done() {
		t.Errorf("job = %+v", job)
	}
	checkCommon(t, rec.last(t), "POST", "/v1/apps/annotation-reply/enable")
	checkJSONBody(t, rec.last(t), `{"score_threshold":0.9,"embedding_provider_name":"openai","embedding_model_name":"text-embedding-3-small"}`)

	// Polling: waiting twice, then completed.
	rec.answer(func(w http.ResponseWriter, r *http.Request, n int) {
		status := "waiting"
		if n >= 4 {
			status = "completed"
		}
		jsonReply(200, `{"job_id":"j1","job_status":"`+status+`","error_msg":""}`)(w, r, n)
	})
	job, err = c.WaitAnnotationReply(testContext(t), AnnotationReplyEnable, "j1", time.Millisecond)
	if err != nil || job.JobStatus != JobStatusCompleted || !job.Done() {
		t.Fatalf("wait = %+v, %v", job, err)
	}
	if n := rec.count(); n != 4 {
		t.Errorf("requests = %d, want 1 start + 3 polls", n)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/apps/annotation-reply/enable/status/j1")

	rec.answer(jsonReply(200, `{"job_id":"j1","job_status":"error","error_msg":"model not found"}`))
	job, err = c.WaitAnnotationReply(testContext(t), AnnotationReplyDisable, "j1", 0)
	var jobErr *AnnotationReplyJobError
	if !errors.As(err, &jobErr) || jobErr.Message != "model not found" || jobErr.Action != "disable" || job.JobStatus != JobStatusError {
		t.Errorf("failed job: %+v, %v", job, err)
	}
	if !strings.Contains(err.Error(), "disable job j1 failed: model not found") {
		t.Errorf("error text %q", err)
	}

	// A job that never finishes ends with the context.
	rec.answer(jsonReply(200, `{"job_id":"j1","job_status":"waiting","error_msg":""}`))
	// Generous: the first poll must answer before the deadline even on a
	// loaded machine; the job never finishes, so the deadline still ends it.
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
	defer cancel()
	job, err = c.WaitAnnotationReply(ctx, AnnotationReplyEnable, "j1", 5*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || job == nil || job.JobStatus != JobStatusWaiting {
		t.Errorf("endless job: %+v, %v", job, err)
	}

	// Both spellings of an unknown job (docs/api §28.2).
	for _, status := range []int{400, 404} {
		rec.answer(jsonReply(status, `{"code":"x","message":"The job does not exist.","status":0}`))
		_, err := c.AnnotationReplyStatus(testContext(t), AnnotationReplyEnable, "j2")
		if !IsAnnotationReplyJobNotFound(err) {
			t.Errorf("HTTP %d: %v, want IsAnnotationReplyJobNotFound", status, err)
		}
	}
}

func TestPreviewFile(t *testing.T) {
	rec := &recorder{respond: func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Query().Get("as_attachment") == "true" {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt")
		} else {
			w.Header().Set("Content-Type", "text/plain")
		}
		_, _ = io.WriteString(w, "hello")
	}}
	c := newTestClient(t, rec)
	f, err := c.PreviewFile(testContext(t), "f1", FilePreviewParams{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f.Body)
	f.Body.Close()
	if string(b) != "hello" || f.ContentType != "text/plain" || f.ContentLength != 5 || f.Filename != "" {
		t.Errorf("preview = %+v %q", f, b)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/files/f1/preview")
	checkQuery(t, rec.last(t), url.Values{"user": {"user-1"}})

	f, err = c.PreviewFile(testContext(t), "f1", FilePreviewParams{AsAttachment: true, User: "u2"})
	if err != nil {
		t.Fatal(err)
	}
	f.Body.Close()
	if f.Filename != "résumé.txt" || f.ContentType != "application/octet-stream" {
		t.Errorf("attachment = %+v", f)
	}
	checkQuery(t, rec.last(t), url.Values{"as_attachment": {"true"}, "user": {"u2"}})

	rec.answer(jsonReply(404, `{"code":"file_not_found","message":"The requested file was not found.","status":404}`))
	if _, err := c.PreviewFile(testContext(t), "f1", FilePreviewParams{}); !IsNotFound(err) {
		t.Errorf("missing file: %v", err)
	}
}

func TestConversationVariables(t *testing.T) {
	const item = `{"id":"v1","name":"topic","value_type":"string","value":"AI","description":null,"created_at":1705395332,"updated_at":1705395400}`
	rec := &recorder{respond: jsonReply(200, `{"limit":20,"has_more":true,"data":[`+item+`]}`)}
	c := newTestClient(t, rec)
	page, err := c.ListConversationVariables(testContext(t), "c1", ListConversationVariablesParams{LastID: "v0", Limit: 20, VariableName: "top"})
	if err != nil {
		t.Fatal(err)
	}
	v := page.Data[0]
	if !page.HasMore || v.Name != "topic" || *v.Value != "AI" || v.Description != nil || v.UpdatedAt != 1705395400 {
		t.Errorf("page = %+v", page)
	}
	checkCommon(t, rec.last(t), "GET", "/v1/conversations/c1/variables")
	checkQuery(t, rec.last(t), url.Values{"user": {"user-1"}, "last_id": {"v0"}, "limit": {"20"}, "variable_name": {"top"}})

	rec.answer(jsonReply(200, item))
	if _, err := c.UpdateConversationVariable(testContext(t), "c1", "v1", map[string]any{"k": 1}, ""); err != nil {
		t.Fatal(err)
	}
	checkCommon(t, rec.last(t), "PUT", "/v1/conversations/c1/variables/v1")
	checkJSONBody(t, rec.last(t), `{"value":{"k":1},"user":"user-1"}`)
	// A null value is a value (Dify's payload only requires the key).
	if _, err := c.UpdateConversationVariable(testContext(t), "c1", "v1", nil, "u2"); err != nil {
		t.Fatal(err)
	}
	checkJSONBody(t, rec.last(t), `{"value":null,"user":"u2"}`)

	rec.answer(jsonReply(400, `{"code":"not_chat_app","message":"Please check if your app mode matches the right API route.","status":400}`))
	_, err = c.ListConversationVariables(testContext(t), "c1", ListConversationVariablesParams{})
	if apiErr, ok := AsAPIError(err); !ok || apiErr.Code != "not_chat_app" {
		t.Errorf("agent app: %v", err)
	}
}

func TestMessageEndAnnotation(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		wantID string
	}{
		{``, ""},
		{`null`, ""},
		{`{"id":"a1","account":{"id":"acc","name":"Owner"}}`, "a1"},
	} {
		m := MessageEndMetadata{AnnotationReply: []byte(tc.raw)}
		got, err := m.Annotation()
		if err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		if (got == nil) != (tc.wantID == "") || (got != nil && (got.ID != tc.wantID || got.Account.Name != "Owner")) {
			t.Errorf("%q: got %+v", tc.raw, got)
		}
	}
	m := MessageEndMetadata{AnnotationReply: []byte(`"x"`)}
	if _, err := m.Annotation(); err == nil {
		t.Error("a string annotation_reply decoded without error")
	}
}
