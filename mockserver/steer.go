package mockserver

// Route steering: what the request's X-Dify-Mock-* headers and the control
// API's rules ask of a route. POST /chat-messages decides in its steer phase
// (chat_steer.go, header > rule > cassette > server); every other route in
// withFaults (header > rule > server). Both read the headers and take rules
// with the helpers here.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// badFault is the 400 for a spec that does not parse.
func badFault(source string, err error) *apiError {
	return invalidParam(fmt.Sprintf("%s: %v. Known faults: %s", source, err, fault.Names()))
}

// headerFault parses X-Dify-Mock-Fault; present is false without the header.
// Several header lines are one list, as HTTP joins them.
func headerFault(r *http.Request) (spec fault.Spec, present bool, e *apiError) {
	v := strings.TrimSpace(strings.Join(r.Header.Values(fault.Header), ","))
	if v == "" {
		return fault.Spec{}, false, nil
	}
	spec, err := fault.Parse(v)
	if err != nil {
		return fault.Spec{}, true, badFault(fault.Header, err)
	}
	return spec, true, nil
}

// withFaults applies response faults to a route other than POST
// /chat-messages, whose handler parses the header with the request
// (parseChat) and applies faults itself once it knows the cassette.
func (s *appServer) withFaults(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		spec, present, e := headerFault(r)
		if e != nil {
			writeError(w, e)
			return
		}
		if !present {
			spec = s.routeFault(w, r, ps)
		}
		if !s.beforeResponse(w, r, spec, false) {
			return
		}
		h(w, r, ps)
	}
}

// parseSpeed validates an X-Dify-Mock-Speed value.
func parseSpeed(v string) (float64, *apiError) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !validSpeed(f) {
		return 0, invalidParam(fmt.Sprintf("%s must be 0 (no delays) or a number from %v to %v (1 = recorded timing)", HeaderSpeed, minSpeed, maxSpeed))
	}
	return f, nil
}

// takeRule returns the rule that applies to a request, if any, and counts
// its use. Routes other than POST /chat-messages only take rules that set a
// fault: a cassette or speed rule waits for the chat request it is meant
// for.
func (s *appServer) takeRule(r *http.Request, user, conv string, chat bool) (rules.Rule, fault.Spec, bool) {
	if s.rules == nil {
		return rules.Rule{}, fault.Spec{}, false
	}
	var want func(*rules.Rule) bool
	if !chat {
		want = func(r *rules.Rule) bool { return r.Fault != "" }
	}
	rule, ok := s.rules.Take(rules.Request{App: s.name, Method: r.Method, Path: r.URL.Path, User: user, Conversation: conv}, want)
	if !ok {
		return rules.Rule{}, fault.Spec{}, false
	}
	var spec fault.Spec
	if rule.Fault != "" {
		spec, _ = fault.Parse(rule.Fault) // checked when the rule was added
	}
	return rule, spec, true
}

// routeRule is takeRule for routes other than chat: the user and the
// conversation come from the query string or the path.
func (s *appServer) routeRule(r *http.Request, ps httprouter.Params) (rules.Rule, fault.Spec, bool) {
	if s.rules == nil || s.rules.Len() == 0 { // no rules: no query to parse
		return rules.Rule{}, fault.Spec{}, false
	}
	q := r.URL.Query()
	conv := ps.ByName("conversation_id")
	if conv == "" {
		conv = q.Get("conversation_id")
	}
	return s.takeRule(r, q.Get("user"), strings.ToLower(conv), false)
}

// routeFault is the fault for a route other than chat without a
// X-Dify-Mock-Fault header: a rule's, else the server's. Not inlined, so
// that its locals stay off the stack of the handlers that call it (the
// chat route's deepest point, stack_test.go).
//
//go:noinline
func (s *appServer) routeFault(w http.ResponseWriter, r *http.Request, ps httprouter.Params) fault.Spec {
	rule, spec, ok := s.routeRule(r, ps)
	if !ok {
		return s.fault
	}
	journal.Of(w).Update(func(e *journal.Entry) { e.Rule, e.Fault = rule.ID, spec.String() })
	return spec
}
