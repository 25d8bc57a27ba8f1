package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The annotation-reply rows (docs/mock/annotations.md "Cost"): with
// benchAnnotations annotations stored and reply enabled, a chat whose
// 100 KB query an annotation answers, and another user's GET
// /conversations while such chats run.
const benchAnnotations = 20000

// annotationQuery is the 100 KB query: the words of annotation 7's
// question, repeated.
var annotationQuery = strings.Repeat("what are the opening hours of shop 7 ", 100<<10/len("what are the opening hours of shop 7 "))

func init() {
	httpEndpoints["annotation-chat"] = httpEndpoint{
		route: "POST /chat-messages answered by one of 20,000 annotations (100 KB query; time to the first frame)", want: http.StatusOK, firstByte: true,
		setup: func(ctx context.Context, c *http.Client, base, _ string) (func(int64) (*http.Request, error), error) {
			if err := seedAnnotations(ctx, c, base); err != nil {
				return nil, err
			}
			return func(n int64) (*http.Request, error) {
				return annotationChat(base, fmt.Sprintf("bench-annotation-%d", n%50))
			}, nil
		}}
	httpEndpoints["conversations-during-annotation"] = httpEndpoint{
		route: "GET /conversations while 100 KB annotation queries run (1 in flight)", want: http.StatusOK,
		setup: func(ctx context.Context, c *http.Client, base, user string) (func(int64) (*http.Request, error), error) {
			if _, err := seedConversations(ctx, c, base, user, 20); err != nil {
				return nil, err
			}
			if err := seedAnnotations(ctx, c, base); err != nil {
				return nil, err
			}
			for range 1 { // the heavy user, until the run ends
				go func() {
					for ctx.Err() == nil {
						req, err := annotationChat(base, "bench-annotation-heavy")
						if err != nil {
							return
						}
						req.Header.Set("Authorization", "Bearer app-bench")
						if resp, err := c.Do(req.WithContext(ctx)); err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				}()
			}
			return func(int64) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+"/conversations?limit=20&user="+user, nil)
			}, nil
		}}
}

func annotationChat(base, user string) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"query": annotationQuery, "inputs": map[string]any{}, "user": user, "response_mode": "streaming"})
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequest(http.MethodPost, base+"/chat-messages", strings.NewReader(string(body)))
	if err == nil {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Dify-Mock-Speed", "0")
	}
	return r, err
}

// seedAnnotations stores benchAnnotations annotations (unless the server
// has them already) and enables annotation reply.
func seedAnnotations(ctx context.Context, c *http.Client, base string) error {
	do := func(method, path, body string) ([]byte, int, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("Authorization", "Bearer app-bench")
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return data, resp.StatusCode, err
	}
	data, status, err := do(http.MethodGet, "/apps/annotations?limit=1", "")
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("listing annotations: HTTP %d %v", status, err)
	}
	var page struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(data, &page); err != nil {
		return err
	}
	err = forEach(page.Total, benchAnnotations, 50, func(i int) error {
		body := fmt.Sprintf(`{"question":"what are the opening hours of shop %d %s","answer":"9 to 5."}`, i, strings.Repeat("x", i%40+1))
		if _, status, err := do(http.MethodPost, "/apps/annotations", body); err != nil || status != http.StatusCreated {
			return fmt.Errorf("creating annotation %d: HTTP %d %v", i, status, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	data, status, err = do(http.MethodPost, "/apps/annotation-reply/enable",
		`{"score_threshold":0.8,"embedding_provider_name":"bench","embedding_model_name":"bench"}`)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("enabling annotation reply: HTTP %d %v %s", status, err, data)
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(data, &job); err != nil {
		return err
	}
	for range 100 {
		data, status, err = do(http.MethodGet, "/apps/annotation-reply/enable/status/"+job.JobID, "")
		if err == nil && status == http.StatusOK && strings.Contains(string(data), `"completed"`) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("annotation reply did not become enabled: " + string(data))
}
