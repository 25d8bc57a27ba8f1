package dify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

// newAnnotationServer stands in for Dify's annotation routes (docs/api §27–§28):
// it creates one annotation and finishes every reply job on the second poll.
func newAnnotationServer() *httptest.Server {
	polls := 0
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintln(w, body)
	}
	mux.HandleFunc("POST /v1/apps/annotations", func(w http.ResponseWriter, r *http.Request) {
		var req dify.AnnotationRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		b, _ := json.Marshal(dify.Annotation{ID: "a-1", Question: req.Question, Answer: req.Answer, CreatedAt: 1760000000})
		reply(w, http.StatusCreated, string(b))
	})
	mux.HandleFunc("POST /v1/apps/annotation-reply/enable", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, `{"job_id":"j-1","job_status":"waiting"}`)
	})
	mux.HandleFunc("GET /v1/apps/annotation-reply/enable/status/j-1", func(w http.ResponseWriter, _ *http.Request) {
		polls++
		status := "waiting"
		if polls >= 2 {
			status = "completed"
		}
		reply(w, http.StatusOK, `{"job_id":"j-1","job_status":"`+status+`","error_msg":""}`)
	})
	mux.HandleFunc("POST /v1/messages/m-1/feedbacks", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, `{"result":"success"}`)
	})
	mux.HandleFunc("GET /v1/app/feedbacks", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, `{"data":[{"id":"f-1","app_id":"app-1","conversation_id":"c-1","message_id":"m-1","rating":"like","content":"spot on","from_source":"user","from_end_user_id":"eu-1","from_account_id":null,"created_at":"2025-05-13T08:21:47","updated_at":"2025-05-13T08:21:47"}]}`)
	})
	return httptest.NewServer(mux)
}

// Add an annotation and turn annotation reply on, waiting for Dify's
// background job to finish.
func ExampleClient_StartAnnotationReply() {
	srv := newAnnotationServer()
	defer srv.Close()
	client, err := dify.NewClient(srv.URL+"/v1", "app-example-key")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a, err := client.CreateAnnotation(ctx, dify.AnnotationRequest{Question: "What are your opening hours?", Answer: "9am to 5pm, Monday to Friday."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("annotation:", a.ID, a.HitCount)

	job, err := client.StartAnnotationReply(ctx, dify.AnnotationReplyEnable, dify.AnnotationReplyRequest{
		ScoreThreshold: 0.9, EmbeddingProviderName: "openai", EmbeddingModelName: "text-embedding-3-small",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("started:", job.JobStatus)
	job, err = client.WaitAnnotationReply(ctx, dify.AnnotationReplyEnable, job.JobID, 10*time.Millisecond)
	if err != nil {
		log.Fatal(err) // *dify.AnnotationReplyJobError when the job failed
	}
	fmt.Println("finished:", job.JobStatus)
	// Output:
	// annotation: a-1 0
	// started: waiting
	// finished: completed
}

// Rate an answer, then read the app's feedback list.
func ExampleClient_SendFeedback() {
	srv := newAnnotationServer()
	defer srv.Close()
	client, err := dify.NewClient(srv.URL+"/v1", "app-example-key", dify.WithUser("user-123"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	comment := "spot on"
	if err := client.SendFeedback(ctx, "m-1", dify.FeedbackRequest{Rating: dify.RatingLike, Content: &comment}); err != nil {
		log.Fatal(err)
	}
	page, err := client.ListAppFeedbacks(ctx, dify.ListAppFeedbacksParams{Limit: 20})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range page.Data {
		fmt.Println(f.MessageID, f.Rating, *f.Content, f.FromSource)
	}
	// Revoking is SendFeedback with an empty Rating.
	// Output:
	// m-1 like spot on user
}
