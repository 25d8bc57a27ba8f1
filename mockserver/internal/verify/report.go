package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/conformance"
)

// redact replaces every key in the report's texts with {key}. The runner
// already keeps keys out of observations; this also covers header values,
// transport errors and refusals quoted from elsewhere.
func (r *Report) redact(keys ...string) {
	s := func(v *string) {
		for _, k := range keys {
			if k != "" {
				*v = strings.ReplaceAll(*v, k, conformance.PhKey)
			}
		}
	}
	for _, list := range [][]Difference{r.Differences, r.Errors} {
		for i := range list {
			d := &list[i]
			for _, f := range []*string{&d.Case, &d.Route, &d.Class, &d.Aspect, &d.Path, &d.Upstream, &d.Mock} {
				s(f)
			}
		}
	}
	for _, list := range [][]Skip{r.Skipped, r.NotRecorded} {
		for i := range list {
			s(&list[i].Reason)
		}
	}
	for i := range r.Cleanup {
		s(&r.Cleanup[i])
	}
	for _, f := range []*string{&r.Upstream, &r.Mock, &r.User, &r.Error} {
		s(f)
	}
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// cell is at most this many characters of a value in the table (--json
// has them whole).
const cell = 70

// WriteTable writes the report for people: one row per difference,
// grouped by case, then a summary.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "upstream %s (%s)  vs  mock %s (%s)\n", r.Upstream, orUnknown(r.UpstreamMode), r.Mock, orUnknown(r.MockMode))
	fmt.Fprintf(w, "apps: upstream %q, mock %q (key: %s)\n\n", r.UpstreamApp, r.MockApp, orUnknown(r.MockKey))
	table := func(title string, list []Difference) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(w, "%s:\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tROUTE\tCLASS\tASPECT\tPATH\tUPSTREAM\tMOCK")
		last := ""
		for _, d := range list {
			name, route, class := d.Case, d.Route, d.Class
			if name == last {
				name, route, class = "", "", ""
			}
			last = d.Case
			up, mock := shortPair(d.Upstream, d.Mock)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, route, class, d.Aspect, d.Path, up, mock)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	table("Differences", r.Differences)
	table("No answer (comparison incomplete)", r.Errors)
	if len(r.Recorded) > 0 {
		fmt.Fprintf(w, "Live answers written as cassettes:\n")
		for _, p := range r.Recorded {
			fmt.Fprintf(w, "  %s\n", p)
		}
		fmt.Fprintln(w)
	}
	for _, s := range r.NotRecorded {
		fmt.Fprintf(w, "not recorded: %s: %s\n", s.Case, s.Reason)
	}
	for _, c := range r.Cleanup {
		fmt.Fprintf(w, "cleanup failed: %s\n", c)
	}
	cases := map[string]bool{}
	for _, d := range r.Differences {
		cases[d.Case] = true
	}
	if r.Error != "" {
		// No "0 difference(s)": nothing was compared that could differ.
		_, err := fmt.Fprintf(w, "not compared: %s (%d case(s), %d compared)\n", r.Error, r.Cases, r.Compared)
		return err
	}
	fmt.Fprintf(w, "%d case(s), %d compared, %d skipped on both sides, %d difference(s) in %d case(s), %d case(s) without an answer",
		r.Cases, r.Compared, len(r.Skipped), len(r.Differences), len(cases), len(r.Errors))
	if r.Interrupted {
		fmt.Fprint(w, "; interrupted")
	}
	_, err := fmt.Fprintln(w)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "mode unknown"
	}
	return s
}

// shortPair quotes each value when it has spaces or control characters,
// and cuts both to cell characters so that the first place they differ
// stays in view: two long event sequences that share a prefix show the
// part from a little before it ("…agent_message,agent_log,message_end"),
// not the same cut prefix twice.
func shortPair(a, b string) (string, string) {
	a, b = quoted(a), quoted(b)
	ra, rb := []rune(a), []rune(b)
	if len(ra) <= cell && len(rb) <= cell {
		return a, b
	}
	start := 0
	for start < len(ra) && start < len(rb) && ra[start] == rb[start] {
		start++
	}
	// Keep some shared context before the difference, and start after a
	// separator when there is one close by.
	const context = 16
	if start <= cell-context {
		start = 0
	} else {
		start -= context
		for i := start; i < start+context; i++ {
			if i < len(ra) && strings.ContainsRune(",. ", ra[i]) {
				start = i + 1
				break
			}
		}
	}
	return cut(ra, start), cut(rb, start)
}

func quoted(v string) string {
	if v == "" {
		return "-"
	}
	if strings.ContainsAny(v, " \t\n\r\"") {
		v = strconv.Quote(v)
	}
	return v
}

// cut is r from start, at most cell characters with "…" marking each end
// that was cut.
func cut(r []rune, start int) string {
	if start >= len(r) {
		start = max(0, len(r)-cell+1)
	}
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	room := cell - len([]rune(prefix))
	if len(r)-start <= room {
		return prefix + string(r[start:])
	}
	return prefix + string(r[start:start+room-1]) + "…"
}
