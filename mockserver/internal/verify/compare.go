package verify

import (
	"encoding/json"
	"fmt"
	"mime"
	"sort"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
)

// comparedHeaders are response headers clients act on besides Content-Type
// and Location (which conformance.Observed already carries). CORS headers
// are left out on purpose: they depend on how each server is deployed.
var comparedHeaders = []string{"Content-Disposition", "Allow", "WWW-Authenticate"}

// presenceHeaders are compared for presence only (their values are times).
var presenceHeaders = []string{"Retry-After"}

// compare lists how the mock's answer to c (m, mex) differs from the
// upstream's (u, uex).
func compare(c conformance.Case, u, m conformance.Observed, uex, mex *exchange) []Difference {
	var out []Difference
	add := func(aspect, path, a, b string) {
		if a != b {
			out = append(out, Difference{Case: c.Name, Route: c.Route, Class: c.Class, Aspect: aspect, Path: path, Upstream: a, Mock: b})
		}
	}
	switch {
	case u.Skipped != "" && m.Skipped != "":
		return nil
	case u.Skipped != "" || m.Skipped != "":
		add(AspectSkipped, "", ranOrSkipped(u), ranOrSkipped(m))
		return out
	case u.Err != "" || m.Err != "":
		add(AspectError, "", answeredOrErr(u), answeredOrErr(m))
		return out
	}
	// When only one side answered JSON, its fields are one difference
	// ("$"), not one per field; when only one side answered an error
	// envelope, the code and message rows already say so and the two
	// bodies' fields are not comparable.
	oneSidedJSON := (len(u.Shape) == 0) != (len(m.Shape) == 0)
	oneSidedError := (u.Envelope == nil) != (m.Envelope == nil)
	for _, d := range conformance.Diff(u, m) {
		if d.Aspect == "events" {
			continue // compared below with repeats folded
		}
		if d.Aspect == "field" && ((oneSidedJSON && d.Path != "$") || (oneSidedError && !oneSidedJSON)) {
			continue
		}
		add(d.Aspect, d.Path, d.A, d.B)
	}
	add(AspectEvents, "", strings.Join(fold(u.Events), ","), strings.Join(fold(m.Events), ","))
	if uex == nil || mex == nil {
		return out
	}
	if u.ContentType == m.ContentType {
		add(AspectHeader, "Content-Type", normalContentType(uex.respHeader.Get("Content-Type")), normalContentType(mex.respHeader.Get("Content-Type")))
	}
	for _, h := range comparedHeaders {
		add(AspectHeader, h, uex.respHeader.Get(h), mex.respHeader.Get(h))
	}
	for _, h := range presenceHeaders {
		add(AspectHeader, h, present(uex.respHeader.Get(h)), present(mex.respHeader.Get(h)))
	}
	if uex.isStream() && mex.isStream() {
		us, ms := eventShapes(uex), eventShapes(mex)
		for _, ev := range sortedKeys(us) {
			mshape, ok := ms[ev]
			if !ok {
				continue // the event sequence already says so
			}
			for _, d := range conformance.DiffShapes(us[ev], mshape) {
				add(AspectEventFields, ev+" "+d.Path, d.A, d.B)
			}
		}
	}
	return out
}

func ranOrSkipped(o conformance.Observed) string {
	if o.Skipped != "" {
		return "skipped: " + o.Skipped
	}
	return "ran"
}

func answeredOrErr(o conformance.Observed) string {
	if o.Err != "" {
		return "no answer: " + o.Err
	}
	return fmt.Sprintf("answered %d", o.Status)
}

func present(v string) string {
	if v == "" {
		return ""
	}
	return "(present)"
}

// fold drops immediate repeats: how many chunks an answer streams in
// depends on the text, not on the layout.
func fold(events []string) []string {
	var out []string
	for _, e := range events {
		if len(out) == 0 || out[len(out)-1] != e {
			out = append(out, e)
		}
	}
	return out
}

// normalContentType is the Content-Type with a lower-case media type and
// parameters, in a stable order.
func normalContentType(v string) string {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		return v
	}
	for k, pv := range params {
		params[k] = strings.ToLower(pv)
	}
	return mime.FormatMediaType(mt, params)
}

// eventShapes merges the JSON shape of every frame of a stream by event
// type (the "event" field of the data; pings left out).
func eventShapes(ex *exchange) map[string]conformance.Shape {
	out := map[string]conformance.Shape{}
	for _, f := range ex.frames() {
		data := frameData(f.Raw)
		if data == nil {
			continue
		}
		var head struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(data, &head) != nil || head.Event == "" || head.Event == "ping" {
			continue
		}
		shape := conformance.ShapeOf(data)
		if shape == nil {
			continue
		}
		merged, ok := out[head.Event]
		if !ok {
			merged = conformance.Shape{}
			out[head.Event] = merged
		}
		for p, k := range shape {
			merged[p] = mergeKinds(merged[p], k)
		}
	}
	return out
}

// frameData joins a frame's data lines, as an SSE client does.
func frameData(raw []byte) []byte {
	var parts []string
	for _, line := range strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			parts = append(parts, strings.TrimPrefix(v, " "))
		}
	}
	if parts == nil {
		return nil
	}
	return []byte(strings.Join(parts, "\n"))
}

// mergeKinds unions two "|"-joined kind lists, sorted, as Shape does.
func mergeKinds(a, b string) string {
	set := map[string]bool{}
	for _, s := range []string{a, b} {
		for _, k := range strings.Split(s, "|") {
			if k != "" {
				set[k] = true
			}
		}
	}
	kinds := make([]string, 0, len(set))
	for k := range set {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, "|")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
