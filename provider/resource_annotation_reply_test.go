package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

// The two job outcomes the mock cannot be made to produce through the
// resource's validated arguments: a job that ends in error and one that
// never finishes (a Dify without a worker).

func jobServer(t *testing.T, final string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/apps/annotation-reply/enable":
			_, _ = w.Write([]byte(`{"job_id":"7d0c1c5e-2f7e-4c1a-9f5e-3d6f1b2a4c8e","job_status":"waiting"}`))
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/apps/annotation-reply/enable/status/"):
			polls.Add(1)
			_, _ = w.Write([]byte(final))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &polls
}

func replyResource(t *testing.T, baseURL string) *annotationReplyResource {
	t.Helper()
	d, err := newProviderData(settings{BaseURL: baseURL + "/v1", APIKey: testAPIKey, User: "u",
		RetryMaxAttempts: 1, RetryMaxDelay: 10 * time.Millisecond, RequestTimeout: 5 * time.Second}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &annotationReplyResource{data: d}
}

func replyModel() annotationReplyModel {
	return annotationReplyModel{ScoreThreshold: types.Float64Value(0.9),
		EmbeddingProviderName: types.StringValue("openai"), EmbeddingModelName: types.StringValue("text-embedding-3-small")}
}

func TestAnnotationReply_jobError(t *testing.T) {
	old := annotationReplyPollInterval
	annotationReplyPollInterval = 10 * time.Millisecond
	t.Cleanup(func() { annotationReplyPollInterval = old })
	srv, _ := jobServer(t, `{"job_id":"7d0c1c5e-2f7e-4c1a-9f5e-3d6f1b2a4c8e","job_status":"error","error_msg":"Incorrect API key provided"}`)
	_, diags := replyResource(t, srv.URL).runJob(context.Background(), dify.AnnotationReplyEnable, replyModel(), time.Minute)
	if !diags.HasError() || !strings.Contains(diags[0].Detail(), "ended in error: Incorrect API key provided") ||
		!strings.Contains(diags[0].Detail(), `"text-embedding-3-small" of "openai"`) {
		t.Fatalf("job error: %v", diags)
	}
}

func TestAnnotationReply_jobNeverFinishes(t *testing.T) {
	old := annotationReplyPollInterval
	annotationReplyPollInterval = 10 * time.Millisecond
	t.Cleanup(func() { annotationReplyPollInterval = old })
	srv, polls := jobServer(t, `{"job_id":"7d0c1c5e-2f7e-4c1a-9f5e-3d6f1b2a4c8e","job_status":"waiting","error_msg":""}`)
	start := time.Now()
	_, diags := replyResource(t, srv.URL).runJob(context.Background(), dify.AnnotationReplyEnable, replyModel(), 300*time.Millisecond)
	if !diags.HasError() || !strings.Contains(diags[0].Detail(), "did not finish within 300ms") || !strings.Contains(diags[0].Detail(), "worker") {
		t.Fatalf("timeout: %v", diags)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a 300ms limit took %s", took)
	}
	if polls.Load() < 2 {
		t.Errorf("the job was polled %d times before the timeout", polls.Load())
	}
}
