package rules

import (
	"sync"
	"testing"
)

func TestTakeCountsAndExpires(t *testing.T) {
	changes := 0
	s := New(func() { changes++ })
	a, err := s.Add(Rule{Fault: "status:500", Times: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Add(Rule{User: "bob", Cassette: "x"})
	req := Request{Method: "POST", Path: "/v1/chat-messages", User: "alice"}
	for i := range 2 {
		got, ok := s.Take(req, nil)
		if !ok || got.ID != a.ID || got.Used != i+1 {
			t.Fatalf("take %d: %+v %v", i, got, ok)
		}
	}
	if _, ok := s.Take(req, nil); ok {
		t.Fatal("a spent rule still matches")
	}
	// bob's rule is newer and matches bob only; want filters it out.
	if _, ok := s.Take(Request{User: "bob"}, func(r *Rule) bool { return r.Fault != "" }); ok {
		t.Fatal("want did not filter")
	}
	if got, ok := s.Take(Request{User: "bob"}, nil); !ok || got.ID != b.ID || got.Remaining != nil {
		t.Fatalf("%+v", got)
	}
	if s.Len() != 1 || changes != 5 {
		t.Fatalf("len %d, changes %d", s.Len(), changes)
	}
}

func TestCheck(t *testing.T) {
	bad := []Rule{{}, {Fault: "x", Times: -1}, {Speed: ptr(-1)}, {Speed: ptr(2e6)}, {Fault: "x", Route: "nope"}}
	for _, r := range bad {
		if Check(&r) == nil {
			t.Errorf("%+v accepted", r)
		}
	}
	for _, r := range []Rule{{Speed: ptr(0)}, {Cassette: "a", Route: "GET /v1/*"}, {Fault: "x", Route: "*"}} {
		if err := Check(&r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

func TestTakeIsSafeConcurrently(t *testing.T) {
	s := New(nil)
	_, _ = s.Add(Rule{Fault: "status:429", Times: 100})
	var wg sync.WaitGroup
	var mu sync.Mutex
	hits := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, ok := s.Take(Request{}, nil); ok {
					mu.Lock()
					hits++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if hits != 100 || s.Len() != 0 {
		t.Fatalf("hits %d (want exactly the rule's 100), left %d", hits, s.Len())
	}
}

func ptr(f float64) *float64 { return &f }

// A rule with an app applies to that app's requests only.
func TestRuleApp(t *testing.T) {
	s := New(nil)
	if _, err := s.Add(Rule{App: "beta", Fault: "status:503"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Take(Request{App: "alpha", Method: "GET", Path: "/v1/info"}, nil); ok {
		t.Error("beta's rule applied to alpha's request")
	}
	if r, ok := s.Take(Request{App: "beta", Method: "GET", Path: "/v1/info"}, nil); !ok || r.App != "beta" {
		t.Errorf("beta's rule on beta's request: %+v %v", r, ok)
	}
}
